// libFuzzer: preset JSON files as the GUI and the CLI's --preset read them (core/src/filters/preset.cpp),
// then the chain they describe parsed by core.
#include <string_view>

#include "tilefilter/filters/kernel_store.hpp"
#include "tilefilter/filters/preset.hpp"
#include "tilefilter/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  try {
    static const bool store = (tf::set_kernel_store_dir("/tmp/tilefilter-fuzz-kernels"), true);
    (void)store;
    const auto preset = tf::preset_from_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    (void)tf::parse_chain(tf::to_specs(preset.chain.filters));
  } catch (const tf::Error&) {
  }
  return 0;
}
