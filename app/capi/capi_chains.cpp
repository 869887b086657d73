// The C API's chains (tf_chain_*) and catalogs (tf_filters_json, tf_presets_json).
#include "capi_internal.hpp"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tilefilter/filters/preset.hpp"

using namespace tf;
using namespace tf::capi;

namespace {

std::vector<std::string> spec_list(const char* const* specs, int count) {
  require(count >= 0 && (count == 0 || specs), "no filter specs given");
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    require(specs[i] != nullptr, fmt::format("filter spec {} is NULL", i));
    out.emplace_back(specs[i]);
  }
  return out;
}

tf_chain* make_chain(std::vector<std::string> specs, const Border& border) {
  require(!specs.empty(), "give at least one filter (--filter SPEC) or a preset");
  auto c = std::make_unique<tf_chain>();
  c->chain = parse_chain(specs);
  c->specs = std::move(specs);
  c->border = border;
  c->border_name = to_string(border.mode);
  return c.release();
}

nlohmann::json param_json(const ParamInfo& p) {
  static const char* kinds[] = {"number", "integer", "choice", "bool", "path"};
  nlohmann::json j{{"name", p.name}, {"kind", kinds[static_cast<int>(p.kind)]}, {"help", p.help}};
  if (p.kind == ParamInfo::Kind::Choice || p.kind == ParamInfo::Kind::Path) {
    j["default"] = p.default_text;
    j["choices"] = p.choices;
  } else {
    j["min"] = p.min;
    j["max"] = p.max;
    j["default"] =
        p.kind == ParamInfo::Kind::Bool ? nlohmann::json(p.default_value != 0) : nlohmann::json(p.default_value);
  }
  return j;
}

}  // namespace

extern "C" {

tf_status tf_chain_new(const char* const* specs, int count, tf_chain** out) {
  return guarded([&] {
    require(out != nullptr, "tf_chain_new: no place for the chain");
    *out = nullptr;
    *out = make_chain(spec_list(specs, count), Border{});
  });
}

tf_status tf_chain_from_preset(const char* preset, const char* const* specs, int count, tf_chain** out) {
  return guarded([&] {
    require(out != nullptr, "tf_chain_from_preset: no place for the chain");
    require(preset && *preset, "no preset given");
    *out = nullptr;
    const Preset p = load_preset(find_preset(preset, bundled_folder("presets")));
    std::vector<std::string> all = to_specs(p.chain.filters);
    for (auto& s : spec_list(specs, count)) all.push_back(std::move(s));
    *out = make_chain(std::move(all), p.chain.border);
  });
}

void tf_chain_free(tf_chain* chain) { delete chain; }

void tf_chain_halo(const tf_chain* chain, int halo[4]) {
  const Halo h = chain ? chain_halo(chain->chain) : Halo{};
  halo[0] = h.left;
  halo[1] = h.top;
  halo[2] = h.right;
  halo[3] = h.bottom;
}

const char* tf_chain_border(const tf_chain* chain, double* value) {
  if (!chain) return "";
  if (value) *value = chain->border.value;
  return chain->border_name.c_str();
}

int tf_chain_length(const tf_chain* chain) { return chain ? static_cast<int>(chain->specs.size()) : 0; }

const char* tf_chain_spec(const tf_chain* chain, int index) {
  if (!chain || index < 0 || index >= static_cast<int>(chain->specs.size())) return nullptr;
  return chain->specs[index].c_str();
}

const char* tf_filters_json(void) {
  static const std::string text = [] {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& f : filter_catalog()) {
      nlohmann::json params = nlohmann::json::array();
      for (const auto& p : f.params) params.push_back(param_json(p));
      all.push_back({{"name", f.name}, {"summary", f.summary}, {"params", params}});
    }
    return all.dump();
  }();
  return text.c_str();
}

const char* tf_presets_json(void) {
  static const std::string text = [] {
    nlohmann::json all = nlohmann::json::array();
    for (const std::filesystem::path& path : bundled_preset_files()) {
      try {
        const Preset p = load_preset(path.string());
        all.push_back({{"name", path.stem().string()},
                       {"title", p.name},
                       {"description", p.description},
                       {"path", path.string()},
                       {"specs", to_specs(p.chain.filters)},
                       {"border", to_string(p.chain.border.mode)}});
      } catch (const std::exception&) {  // a broken file is not a preset
      }
    }
    return all.dump();
  }();
  return text.c_str();
}

}  // extern "C"
