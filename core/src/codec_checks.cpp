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

bool looks_like_jpeg(std::span<const unsigned char> b) {
  if (b.empty() || b[0] != 0xFF) return false;
  std::size_t i = 1;
  while (i < b.size() && b[i] == 0xFF) ++i;
  return i < b.size() && b[i] == 0xD8;
}

void check_jpeg_huffman_tables(std::span<const unsigned char> b, const std::string& name) {
  if (!looks_like_jpeg(b)) return;
  auto check_dht = [&](std::size_t p, std::size_t end) {  // p: first table, end: segment end
    while (p < end) {  // a table cut by the end of the file still counts: stb reads zeros there
      std::size_t symbols = 0;
      for (std::size_t k = p + 1; k < std::min(p + 17, end); ++k) symbols += b[k];
      if (symbols > 256) throw decode_error(name, "corrupt JPEG (a Huffman table has more than 256 codes)");
      p += 17 + symbols;
    }
    if (p > end) throw decode_error(name, "corrupt JPEG (a Huffman table runs past its segment)");
  };
  // Walk the marker segments (APPn payloads may hold any bytes, so no blind search for FF C4).
  std::size_t p = 0;
  while (p < b.size()) {
    if (b[p] != 0xFF) {  // entropy-coded data after a start of scan: find the next real marker
      ++p;
      continue;
    }
    while (p < b.size() && b[p] == 0xFF) ++p;  // fill bytes
    if (p >= b.size()) return;
    const unsigned char m = b[p++];
    if (m == 0x00 || m == 0x01 || m == 0xD8 || (m >= 0xD0 && m <= 0xD7)) continue;  // no length
    if (m == 0xD9 || p + 2 > b.size()) return;
    const std::size_t length = (std::size_t(b[p]) << 8) | b[p + 1];
    const std::size_t end = std::min(b.size(), p + length);
    if (m == 0xC4) check_dht(p + 2, end);
    p = std::max(end, p + 2);
  }
}

}  // namespace tf::codec_checks
