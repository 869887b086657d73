// One filter of the GUI's chain: a catalog name plus parameter values, or for "custom" a kernel
// grid. It turns into core's spec text ("gaussian:sigma=2") for the preview, Apply, batch and
// presets alike, and into JSON for preset files.
#pragma once
#include <QJsonObject>
#include <QString>
#include <map>
#include <string>
#include <vector>

#include "kernel_store.hpp"
#include "tilefilter/border.hpp"
#include "tilefilter/filter.hpp"

namespace tf::gui {

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
// "gaussian  sigma 2.5" — what the chain list shows.
QString entry_label(const FilterEntry& entry);

QJsonObject to_json(const FilterEntry& entry);
FilterEntry entry_from_json(const QJsonObject& object);  // throws tf::Error naming what is wrong

// A chain with its border, what presets hold and what every job is built from.
struct ChainSettings {
  std::vector<FilterEntry> filters;
  Border border;
  bool operator==(const ChainSettings& o) const {
    return filters == o.filters && border.mode == o.border.mode && border.value == o.border.value;
  }
};

}  // namespace tf::gui
