#include "codec_checks.hpp"

#include <fmt/format.h>

namespace tf::codec_checks {

Error decode_error(const std::string& name, const std::string& why) {
  return Error(ErrorKind::Decode, fmt::format("{}: {}", name, why));
}

void check_pixel_limit(const std::string& name, long long w, long long h, const Limits& limits) {
  const unsigned __int128 pixels = static_cast<unsigned __int128>(w) * static_cast<unsigned __int128>(h);
  if (pixels > static_cast<unsigned __int128>(limits.max_pixels))
    throw Error(ErrorKind::Limit, fmt::format("{}: {}x{} = {:.0f} pixels exceeds the limit of {} pixels", name, w, h,
                                              static_cast<double>(w) * static_cast<double>(h), limits.max_pixels));
}

bool jpeg_looks_complete(std::span<const unsigned char> b) {
  if (b.size() < 4 || b[0] != 0xFF || b[1] != 0xD8) return true;  // not a JPEG: the decoder decides
  // From the end: whichever of the two markers occurs last decides. A complete file stops at once
  // (its last two bytes), where a forward scan would read the whole entropy-coded data.
  for (std::size_t i = b.size() - 1; i-- > 2;) {
    if (b[i] != 0xFF) continue;
    if (b[i + 1] == 0xD9) return true;
    if (b[i + 1] == 0xDA) return false;
  }
  return false;  // no end-of-image marker at all
}

void check_jpeg_complete(std::span<const unsigned char> bytes, const std::string& name) {
  if (!jpeg_looks_complete(bytes)) throw decode_error(name, "truncated JPEG (no end-of-image marker)");
}

}  // namespace tf::codec_checks
