// libFuzzer: kernel text files. A parsed kernel must be well formed (size, taps, anchor inside).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tilefilter/filters/filter.hpp"
#include "tilefilter/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const tf::Kernel k = tf::parse_kernel_text({reinterpret_cast<const char*>(data), size}, "fuzz.txt");
    const bool line = k.width == 1 || k.height == 1;
    const int most = line ? tf::kMaxSeparableTaps : tf::kMaxKernelSide;
    if (k.width < 1 || k.height < 1 || k.width > most || k.height > most ||
        k.taps.size() != static_cast<std::size_t>(k.width) * k.height || k.anchor_x >= k.width ||
        k.anchor_y >= k.height)
      std::abort();
    const tf::Convolution c = tf::make_convolution(k);
    if (c.separable &&
        (c.row.size() != static_cast<std::size_t>(k.width) || c.col.size() != static_cast<std::size_t>(k.height)))
      std::abort();
  } catch (const tf::Error&) {
  }
  return 0;
}
