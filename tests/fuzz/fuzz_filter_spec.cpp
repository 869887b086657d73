// libFuzzer: filter specs ("name:key=value,..."), and tiling with the parsed footprint.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tilefilter/engine/tiling.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string spec(reinterpret_cast<const char*>(data), size);
  if (spec.find("file=") != std::string::npos) return 0;  // no reading arbitrary paths
  try {
    const tf::Stage s = tf::parse_filter_spec(spec);
    const tf::Halo h = s.halo();
    if (s.convs.empty() || h.left < 0 || h.top < 0 || h.left > tf::kMaxPresetRadius) std::abort();
    const auto tiles = tf::plan_tiles(37, 19, h, {16, 16});
    if (tiles.size() != 6) std::abort();
  } catch (const tf::Error&) {
  }
  return 0;
}
