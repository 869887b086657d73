// A filter chain as a user edits it (GUI) and as preset files hold it (GUI and CLI alike):
//   {"name": "...", "description": "...", "border": "reflect101", "border_value": 0,
//    "filters": [{"filter": "gaussian", "params": {"sigma": 2}}, {"filter": "custom", "kernel": [[...]]}]}
// An entry turns into core's spec text ("gaussian:sigma=2"), which parse_filter_spec() validates;
// a custom kernel travels as its taps and becomes a kernel file (kernel_store.hpp) when a job needs it.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tilefilter/filters/filter.hpp"
#include "tilefilter/filters/kernel_store.hpp"
#include "tilefilter/image/border.hpp"

namespace tf {

// One filter of a chain: a catalog name plus a value for every parameter, or for "custom" a kernel grid.
struct FilterEntry {
  std::string filter;                        // catalog name
  std::map<std::string, double> numbers;     // Number, Integer and Bool parameters
  std::map<std::string, std::string> texts;  // Choice parameters
  KernelGrid kernel;                         // "custom" only: its taps (replaces the file parameter)

  bool is_custom() const { return filter == "custom"; }
  bool operator==(const FilterEntry&) const = default;
};

const FilterInfo* find_filter(const std::string& name);
FilterEntry default_entry(const FilterInfo& info);

// Core's spec for the entry. For "custom" the grid is written to a kernel file first (may throw).
std::string to_spec(const FilterEntry& entry);
std::vector<std::string> to_specs(const std::vector<FilterEntry>& chain);
// Parses a spec like the CLI's --filter (custom:file=K loads K into the grid). Throws tf::Error.
FilterEntry entry_from_spec(const std::string& spec);

// A chain with its border: what presets hold and what every job is built from.
struct ChainSettings {
  std::vector<FilterEntry> filters;
  Border border;
  bool operator==(const ChainSettings& o) const {
    return filters == o.filters && border.mode == o.border.mode && border.value == o.border.value;
  }
};

struct Preset {
  std::string name, description;
  ChainSettings chain;
};

std::string preset_to_json(const Preset& preset);
// `origin` names the file in messages and gives the name when the file has none. Throws tf::Error.
Preset preset_from_json(std::string_view json, const std::string& origin);
// A --preset argument as a file: itself where it holds a '/' or names a file, else NAME or NAME.json
// in `bundled_dir` (the bundled presets, "soft-focus"); `arg` as given where neither exists.
std::string find_preset(const std::string& arg, const std::string& bundled_dir);
Preset load_preset(const std::string& path);                      // throws tf::Error
void save_preset(const std::string& path, const Preset& preset);  // throws tf::Error; atomic

}  // namespace tf
