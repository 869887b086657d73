// The bundled presets: where they lie, and their listing without writing anything
// (tf_presets_stages_json: a custom kernel as its values, where tf_presets_json writes a kernel file).
#include <dlfcn.h>
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi_internal.hpp"
#include "tilefilter/filters/preset.hpp"

namespace tf::capi {

namespace fs = std::filesystem;

// <prefix>/share/tilefilter/WHAT beside the library's <prefix>/lib (or lib/<multiarch>), else the
// source tree's resources/WHAT for a library in the build tree.
std::string bundled_folder(const std::string& what) {
  std::error_code ec;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&tf_version), &info) && info.dli_fname) {
    const fs::path lib = fs::path(info.dli_fname).parent_path();
    for (const fs::path& up : {lib / "..", lib / ".." / ".."}) {
      const fs::path dir = up / "share" / "tilefilter" / what;
      if (fs::is_directory(dir, ec)) return fs::canonical(dir, ec).string();
    }
  }
#ifdef TF_SOURCE_RESOURCES
  const fs::path source = fs::path(TF_SOURCE_RESOURCES) / what;
  if (fs::is_directory(source, ec)) return source.string();
#endif
  return {};
}

std::vector<std::string> bundled_preset_files() {
  const std::string dir = bundled_folder("presets");
  std::vector<std::string> files;
  std::error_code ec;
  if (!dir.empty())
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

nlohmann::json stages_json(const ChainSettings& chain) {
  nlohmann::json stages = nlohmann::json::array();
  for (const FilterEntry& e : chain.filters) {
    if (!e.is_custom()) {
      stages.push_back({{"spec", to_spec(e)}});  // only a custom entry's spec writes a file
      continue;
    }
    const auto normalize = e.numbers.find("normalize");
    stages.push_back(
        {{"kernel", e.kernel.rows()}, {"normalize", normalize != e.numbers.end() && normalize->second != 0}});
  }
  return stages;
}

}  // namespace

}  // namespace tf::capi

extern "C" const char* tf_presets_stages_json(void) {
  using namespace tf;
  static const std::string text = [] {
    nlohmann::json all = nlohmann::json::array();
    for (const std::string& path : capi::bundled_preset_files()) {
      try {
        const Preset p = load_preset(path);
        all.push_back({{"name", std::filesystem::path(path).stem().string()},
                       {"title", p.name},
                       {"description", p.description},
                       {"path", path},
                       {"stages", capi::stages_json(p.chain)},
                       {"border", to_string(p.chain.border.mode)},
                       {"border_value", p.chain.border.value}});
      } catch (const std::exception&) {  // a broken file is not a preset
      }
    }
    return all.dump();
  }();
  return text.c_str();
}
