// Filter entries, their specs, and preset files (JSON through nlohmann::json).
#include "tilefilter/filters/preset.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "tilefilter/util/atomic_write.hpp"
#include "tilefilter/util/error.hpp"

namespace tf {

namespace {

using Kind = ParamInfo::Kind;
using json = nlohmann::ordered_json;

constexpr std::uintmax_t kMaxPresetBytes = 4u << 20;

std::string number_text(double v) { return fmt::format("{:.6g}", v); }

bool is_numeric(Kind k) { return k == Kind::Number || k == Kind::Integer || k == Kind::Bool; }

Error bad(const std::string& why) { return Error(ErrorKind::InvalidArgument, why); }

const ParamInfo* find_param(const FilterInfo& info, const std::string& name) {
  for (const auto& q : info.params)
    if (q.name == name) return &q;
  return nullptr;
}

json entry_to_json(const FilterEntry& e) {
  json o;
  o["filter"] = e.filter;
  json params = json::object();
  const FilterInfo* info = find_filter(e.filter);
  for (const auto& [k, v] : e.numbers) {
    const ParamInfo* p = info ? find_param(*info, k) : nullptr;
    if (p && p->kind == Kind::Bool) params[k] = v != 0;
    else params[k] = v;
  }
  for (const auto& [k, v] : e.texts) params[k] = v;
  if (!params.empty()) o["params"] = params;
  if (e.is_custom()) o["kernel"] = e.kernel.rows();
  return o;
}

FilterEntry entry_from_json(const json& o) {
  if (!o.is_object()) throw bad("a filter is a JSON object");
  const std::string name = o.contains("filter") && o["filter"].is_string() ? o["filter"].get<std::string>() : "";
  const FilterInfo* info = find_filter(name);
  if (!info) throw bad(fmt::format("unknown filter '{}'", name));
  FilterEntry e = default_entry(*info);
  if (o.contains("params")) {
    const json& params = o["params"];
    if (!params.is_object()) throw bad(fmt::format("{}: params is not a JSON object", name));
    for (const auto& [key, value] : params.items()) {
      const ParamInfo* p = find_param(*info, key);
      if (!p) throw bad(fmt::format("{}: unknown parameter '{}'", name, key));
      if (p->kind == Kind::Choice) {
        const std::string v = value.is_string() ? value.get<std::string>() : value.dump();
        if (std::find(p->choices.begin(), p->choices.end(), v) == p->choices.end())
          throw bad(fmt::format("{}: {}={} is not one of {}", name, key, v, fmt::join(p->choices, "|")));
        e.texts[key] = v;
      } else if (p->kind == Kind::Bool) {
        if (!value.is_boolean() && !value.is_number()) throw bad(fmt::format("{}: {} is not true or false", name, key));
        e.numbers[key] = (value.is_boolean() ? value.get<bool>() : value.get<double>() != 0) ? 1 : 0;
      } else if (p->kind != Kind::Path) {
        if (!value.is_number()) throw bad(fmt::format("{}: {} is not a number", name, key));
        const double v = value.get<double>();
        if (!(v >= p->min && v <= p->max) || (p->kind == Kind::Integer && v != std::floor(v)))
          throw bad(fmt::format("{}: {}={} is out of range [{}, {}]", name, key, v, p->min, p->max));
        e.numbers[key] = v;
      }
    }
  }
  if (e.is_custom()) {
    const json rows = o.contains("kernel") ? o["kernel"] : json::array();
    if (!rows.is_array()) throw bad("custom: the kernel is not an array of rows");
    std::vector<std::vector<double>> taps;
    for (const auto& row : rows) {
      if (!row.is_array()) throw bad("custom: a kernel row is not an array of numbers");
      std::vector<double> r;
      for (const auto& v : row) {
        if (!v.is_number()) throw bad("custom: a kernel tap is not a number");
        r.push_back(v.get<double>());
      }
      if (!taps.empty() && r.size() != taps[0].size()) throw bad("custom: kernel rows differ in length");
      taps.push_back(std::move(r));
    }
    if (taps.empty() || taps[0].empty()) throw bad("custom: the preset holds no kernel");
    // One row or one column is a separable axis (up to kMaxSeparableTaps); anything else is 2-D.
    if (taps.size() == 1 || taps[0].size() == 1) {
      if (taps.size() * taps[0].size() > static_cast<std::size_t>(kMaxSeparableTaps))
        throw bad(fmt::format("custom: a one-row or one-column kernel has at most {} taps", kMaxSeparableTaps));
    } else if (taps.size() > kMaxKernelSide || taps[0].size() > kMaxKernelSide) {
      throw bad(fmt::format("custom: kernel larger than {}x{}", kMaxKernelSide, kMaxKernelSide));
    }
    Kernel::from_rows(taps);  // core's own checks on the taps
    e.kernel = KernelGrid::from_rows(taps);
  }
  return e;
}

}  // namespace

const FilterInfo* find_filter(const std::string& name) {
  for (const auto& f : filter_catalog())
    if (f.name == name) return &f;
  return nullptr;
}

FilterEntry default_entry(const FilterInfo& info) {
  FilterEntry e;
  e.filter = info.name;
  for (const auto& p : info.params) {
    if (is_numeric(p.kind)) e.numbers[p.name] = p.default_value;
    else if (p.kind == Kind::Choice) e.texts[p.name] = p.default_text;
  }
  if (e.is_custom()) {
    // A 3x3 box blur is a more useful start than an identity that visibly does nothing.
    e.kernel = KernelGrid{3, 3, std::vector<double>(9, 1.0)};
    e.numbers["normalize"] = 1;
  }
  return e;
}

std::string to_spec(const FilterEntry& e) {
  const FilterInfo* info = find_filter(e.filter);
  if (!info) throw bad(fmt::format("unknown filter '{}'", e.filter));
  std::vector<std::string> items;
  for (const auto& p : info->params) {
    if (p.kind == Kind::Path) {
      if (e.is_custom()) items.push_back(p.name + "=" + spec_value(kernel_file_for(e.kernel)));
      continue;
    }
    if (p.kind == Kind::Choice) {
      auto it = e.texts.find(p.name);
      if (it != e.texts.end() && it->second != p.default_text) items.push_back(p.name + "=" + it->second);
      continue;
    }
    auto it = e.numbers.find(p.name);
    if (it == e.numbers.end()) continue;
    if (p.kind == Kind::Bool) {
      if ((it->second != 0) != (p.default_value != 0)) items.push_back(p.name + (it->second != 0 ? "=true" : "=false"));
    } else if (it->second != p.default_value) {
      items.push_back(p.name + "=" + number_text(it->second));
    }
  }
  std::string spec = e.filter;
  for (std::size_t i = 0; i < items.size(); ++i) spec += (i ? "," : ":") + items[i];
  return spec;
}

std::vector<std::string> to_specs(const std::vector<FilterEntry>& chain) {
  std::vector<std::string> specs;
  for (const auto& e : chain) specs.push_back(to_spec(e));
  return specs;
}

FilterEntry entry_from_spec(const std::string& spec) {
  parse_filter_spec(spec);  // core's own validation and messages
  const auto colon = spec.find(':');
  const FilterInfo* info = find_filter(spec.substr(0, colon));
  FilterEntry e = default_entry(*info);
  if (colon == std::string::npos) return e;
  for (const auto& [key, value] : split_spec_params(spec, std::string_view(spec).substr(colon + 1))) {
    const ParamInfo* p = find_param(*info, key);
    switch (p->kind) {
      case Kind::Path: e.kernel = KernelGrid::from_kernel(load_kernel_file(value)); break;
      case Kind::Choice: e.texts[key] = value; break;
      case Kind::Bool: e.numbers[key] = (value == "true" || value == "1" || value == "yes") ? 1 : 0; break;
      default: e.numbers[key] = std::stod(value); break;
    }
  }
  return e;
}

std::string preset_to_json(const Preset& preset) {
  json o;
  o["name"] = preset.name;
  if (!preset.description.empty()) o["description"] = preset.description;
  o["border"] = to_string(preset.chain.border.mode);
  if (preset.chain.border.mode == BorderMode::Constant) o["border_value"] = preset.chain.border.value;
  json filters = json::array();
  for (const auto& e : preset.chain.filters) filters.push_back(entry_to_json(e));
  o["filters"] = filters;
  return o.dump(2) + "\n";
}

Preset preset_from_json(std::string_view text, const std::string& where) {
  json o;
  try {
    o = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw Error(ErrorKind::InvalidArgument, fmt::format("{}: not valid JSON (at offset {})", where, e.byte));
  } catch (const json::exception& e) {  // e.g. out_of_range: a number too large for a double
    throw Error(ErrorKind::InvalidArgument, fmt::format("{}: not valid JSON ({})", where, e.what()));
  }
  if (!o.is_object()) throw Error(ErrorKind::InvalidArgument, fmt::format("{}: a preset is a JSON object", where));
  auto text_of = [&](const char* key, const std::string& fallback) {
    return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : fallback;
  };
  Preset p;
  p.name = text_of("name", std::filesystem::path(where).stem().string());
  p.description = text_of("description", "");
  const std::string border = text_of("border", "reflect101");
  const auto mode = parse_border_mode(border);
  if (!mode)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("{}: border '{}' is not one of {}", where, border, border_mode_names()));
  const double value =
      o.contains("border_value") && o["border_value"].is_number() ? o["border_value"].get<double>() : 0;
  p.chain.border = {*mode, static_cast<float>(value)};
  const json filters = o.contains("filters") && o["filters"].is_array() ? o["filters"] : json::array();
  if (filters.empty()) throw Error(ErrorKind::InvalidArgument, fmt::format("{}: the preset has no filters", where));
  if (filters.size() > kMaxChainLength)
    throw Error(ErrorKind::Limit, fmt::format("{}: more than {} filters", where, kMaxChainLength));
  for (const auto& f : filters) {
    try {
      p.chain.filters.push_back(entry_from_json(f));
    } catch (const Error& e) {
      throw Error(e.kind(), fmt::format("{}: {}", where, e.what()));
    }
  }
  return p;
}

Preset load_preset(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in || std::filesystem::is_directory(path, ec))
    throw Error(ErrorKind::Io, fmt::format("{}: cannot open preset (no such file)", path));
  if (size > kMaxPresetBytes) throw Error(ErrorKind::Limit, fmt::format("{}: preset larger than 4 MiB", path));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return preset_from_json(text, path);
}

void save_preset(const std::string& path, const Preset& preset) {
  const std::string text = preset_to_json(preset);
  write_file_atomically(
      path, std::span<const unsigned char>(reinterpret_cast<const unsigned char*>(text.data()), text.size()));
}

std::string find_preset(const std::string& arg, const std::string& bundled_dir) {
  std::error_code ec;
  if (arg.find('/') != std::string::npos || std::filesystem::exists(arg, ec)) return arg;
  for (const std::string& name : {arg, arg + ".json"})
    if (!bundled_dir.empty() && std::filesystem::is_regular_file(bundled_dir + "/" + name, ec))
      return bundled_dir + "/" + name;
  return arg;
}

}  // namespace tf
