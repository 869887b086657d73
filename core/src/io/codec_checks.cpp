#include "codec_checks.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <optional>

#include <fmt/format.h>

namespace tf::codec_checks {

Error decode_error(const std::string& name, const std::string& why) {
  return Error(ErrorKind::Decode, fmt::format("{}: {}", name, why));
}

void check_rows_request(const std::string& name, const ImageInfo& info, int y, const ImageView& rows) {
  if (rows.width != info.width || rows.format != info.format || y < 0 || rows.height < 0 ||
      y + rows.height > info.height)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("{}: rows {}..{} of a {}x{} {} image asked as {}", name, y, y + rows.height, info.width,
                            info.height, to_string(info.format), to_string(rows.format)));
}

void check_pixel_limit(const std::string& name, long long w, long long h, const Limits& limits) {
  const unsigned __int128 pixels = static_cast<unsigned __int128>(w) * static_cast<unsigned __int128>(h);
  if (pixels > static_cast<unsigned __int128>(limits.max_pixels))
    throw Error(ErrorKind::Limit, fmt::format("{}: {}x{} = {:.0f} pixels exceeds the limit of {} pixels", name, w, h,
                                              static_cast<double>(w) * static_cast<double>(h), limits.max_pixels));
}

void check_rows_continue(const std::string& path, const ImageView& rows, int width, int height, const Format& format,
                         int next_row, bool failed) {
  if (rows.width != width || rows.format != format || next_row + rows.height > height)
    throw Error(
        ErrorKind::InvalidArgument,
        fmt::format("{}: {} rows of {}x{} {} do not continue a {}x{} {} image at row {}", path, rows.height, rows.width,
                    rows.height, to_string(rows.format), width, height, to_string(format), next_row));
  if (failed) throw Error(ErrorKind::Io, fmt::format("{}: cannot write on after an error", path));
}

void check_writer_args(const std::string& path, const char* format_name, bool (*can_write)(const Format&, std::string*),
                       const Format& format, int width, int height, long long max_side) {
  std::string why;
  if (!can_write(format, &why)) throw Error(ErrorKind::InvalidArgument, fmt::format("{}: {}", path, why));
  if (width <= 0 || height <= 0 || width > max_side || height > max_side)
    throw Error(ErrorKind::InvalidArgument, fmt::format("{}: {} holds 1 to {} pixels a side, not {}x{}", path,
                                                        format_name, max_side, width, height));
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

namespace {
std::uint32_t be32(std::span<const unsigned char> b, std::size_t i) {
  return (std::uint32_t(b[i]) << 24) | (std::uint32_t(b[i + 1]) << 16) | (std::uint32_t(b[i + 2]) << 8) | b[i + 3];
}
bool is_png(std::span<const unsigned char> b) {
  static const unsigned char sig[] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  return b.size() >= 8 && std::memcmp(b.data(), sig, 8) == 0;
}
// Throws "truncated KIND (N bytes of pixels where WxH needs M)" when `have` is short of `need`.
void check_pixels_fit(const std::string& name, const char* kind, std::size_t have, long long width, long long height,
                      unsigned long long need) {
  if (have < need)
    throw decode_error(
        name, fmt::format("truncated {} ({} bytes of pixels where {}x{} needs {})", kind, have, width, height, need));
}

}  // namespace

void check_png_header_limit(std::span<const unsigned char> b, const std::string& name, const Limits& limits) {
  // IHDR is the first chunk: its type at offsets 12..15, width and height at 16..23.
  if (!is_png(b) || b.size() < 24 || std::memcmp(b.data() + 12, "IHDR", 4) != 0) return;
  check_pixel_limit(name, be32(b, 16), be32(b, 20), limits);
}

void check_png_idat_fits(std::span<const unsigned char> b, const std::string& name) {
  if (!is_png(b)) return;
  for (std::size_t p = 8; p + 12 <= b.size();) {  // length(4) type(4) data(length) crc(4)
    const std::size_t length = be32(b, p);
    if (std::memcmp(b.data() + p + 4, "IEND", 4) == 0) return;
    if (length > b.size() - p - 12) {
      if (std::memcmp(b.data() + p + 4, "IDAT", 4) == 0)
        throw decode_error(name, "corrupt or truncated image data (a PNG data chunk runs past the end)");
      return;  // stb skips other chunks and reports the end itself
    }
    p += 12 + length;
  }
}

std::optional<std::vector<unsigned char>> png_without_empty_idat(std::span<const unsigned char> b) {
  if (!is_png(b)) return std::nullopt;
  std::vector<std::pair<std::size_t, std::size_t>> empty;  // [begin, end) of each empty IDAT chunk
  for (std::size_t p = 8; p + 12 <= b.size();) {           // length(4) type(4) data(length) crc(4)
    const std::size_t length = be32(b, p);
    if (length > b.size() - p - 12) break;  // runs past the end: stb reports it
    if (length == 0 && std::memcmp(b.data() + p + 4, "IDAT", 4) == 0) empty.emplace_back(p, p + 12);
    if (std::memcmp(b.data() + p + 4, "IEND", 4) == 0) break;
    p += 12 + length;
  }
  if (empty.empty()) return std::nullopt;
  std::vector<unsigned char> out;
  out.reserve(b.size());
  std::size_t from = 0;
  for (const auto& [begin, end] : empty) {
    out.insert(out.end(), b.begin() + static_cast<std::ptrdiff_t>(from),
               b.begin() + static_cast<std::ptrdiff_t>(begin));
    from = end;
  }
  out.insert(out.end(), b.begin() + static_cast<std::ptrdiff_t>(from), b.end());
  return out;
}

void check_radiance_data(std::span<const unsigned char> b, const std::string& name) {
  std::size_t p = 0;
  // stb's header tokens are lines; it reads 0 at the end of the data, as this reader does.
  auto line = [&] {
    std::string s;
    while (p < b.size() && b[p] != '\n') s.push_back(static_cast<char>(b[p++]));
    ++p;
    return s;
  };
  auto get8 = [&]() -> unsigned { return p < b.size() ? b[p++] : (++p, 0u); };
  auto cut = [&] { return p > b.size(); };
  const std::string magic = line();
  if (magic != "#?RADIANCE" && magic != "#?RGBE") return;
  // The header ends at a line that is empty as a C string: stb tests the token's first char, so a
  // line of NULs ends it too (fuzz_decode: with such a line, this walk took the next lines for
  // header lines and checked nothing, and stb looped on the cut run-length data).
  while (p < b.size()) {
    const std::string s = line();
    if (s.empty() || s[0] == '\0') break;
  }
  long height = 0, width = 0;
  if (std::sscanf(line().c_str(), "-Y %ld +X %ld", &height, &width) != 2 || height <= 0 || width <= 0) return;
  if (height > (1 << 24) || width > (1 << 24)) return;  // stb refuses these itself
  const std::size_t flat_bytes = std::size_t(width) * std::size_t(height) * 4;
  auto check_flat = [&] {  // the whole image as raw RGBE quads from p on
    if (b.size() < p || b.size() - p < flat_bytes)
      throw decode_error(name, "truncated Radiance HDR (pixel data ends early)");
  };
  if (width < 8 || width >= 32768) return check_flat();
  for (long j = 0; j < height; ++j) {
    const std::size_t line_start = p;
    const unsigned c1 = get8(), c2 = get8(), hi = get8();
    if (c1 != 2 || c2 != 2 || (hi & 0x80)) {  // not run-length encoded: stb reads the whole image flat from here
      p = line_start;
      return check_flat();
    }
    if (long((hi << 8) | get8()) != width) return;  // stb: "invalid decoded scanline length"
    for (int k = 0; k < 4; ++k)
      for (long i = 0; i < width;) {
        unsigned count = get8();
        if (count == 0)
          throw decode_error(name, cut() ? "truncated Radiance HDR (run-length data ends early)"
                                         : "corrupt Radiance HDR (run of length 0)");
        if (count > 128) {
          count -= 128;
          get8();
        } else {
          p += count;
        }
        if (long(count) > width - i) return;  // stb: "bad RLE data"
        i += count;
      }
    if (cut()) throw decode_error(name, "truncated Radiance HDR (run-length data ends early)");
  }
}

namespace {

// A binary PNM's header as stb walks it: its numbers and where the pixels start.
struct PnmHeader {
  long long width = 0, height = 0, maxval = 0;
  std::size_t pixels_at = 0;
};

// Nothing for bytes that are no P5 / P6 file. stb reads each number into an int, digit by digit, without a
// bound (undefined past INT_MAX, found by fuzz_decode): such a number is a decode error here.
std::optional<PnmHeader> walk_pnm_header(std::span<const unsigned char> b, const std::string& name) {
  if (b.size() < 2 || b[0] != 'P' || (b[1] != '5' && b[1] != '6')) return std::nullopt;
  std::size_t p = 2;
  // stb's reading: a byte past the end reads as 0 and moves nothing.
  auto get8 = [&]() -> char { return p < b.size() ? static_cast<char>(b[p++]) : '\0'; };
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
  char c = get8();
  auto skip = [&] {  // whitespace and # comments
    for (;;) {
      while (p < b.size() && space(c)) c = get8();
      if (p >= b.size() || c != '#') return;
      while (p < b.size() && c != '\n' && c != '\r') c = get8();
    }
  };
  auto number = [&] {
    long long v = 0;
    while (p < b.size() && c >= '0' && c <= '9') {
      v = v * 10 + (c - '0');
      if (v > std::numeric_limits<int>::max())
        throw decode_error(name, "corrupt PNM header (a number past the largest int)");
      c = get8();
    }
    return v;
  };
  PnmHeader h;
  skip();
  h.width = number();
  skip();
  h.height = number();
  skip();
  h.maxval = number();
  h.pixels_at = p;
  return h;
}

}  // namespace

void check_pnm_header(std::span<const unsigned char> b, const std::string& name) { (void)walk_pnm_header(b, name); }

void check_pnm_data(std::span<const unsigned char> b, const std::string& name) {
  const std::optional<PnmHeader> h = walk_pnm_header(b, name);
  if (!h) return;
  const auto [width, height, maxval, p] = *h;
  if (width <= 0 || height <= 0 || width > (1 << 24) || height > (1 << 24) || maxval > 65535) return;  // stb refuses
  const unsigned long long need = static_cast<unsigned long long>(width) * static_cast<unsigned long long>(height) *
                                  (b[1] == '6' ? 3 : 1) * (maxval > 255 ? 2 : 1);
  check_pixels_fit(name, "PNM", b.size() - p, width, height, need);
}

void check_tga_data(std::span<const unsigned char> b, const std::string& name) {
  if (b.size() < 18) return;
  auto starts = [&](std::initializer_list<unsigned char> sig) { return std::equal(sig.begin(), sig.end(), b.begin()); };
  const bool other = looks_like_jpeg(b) || is_png(b) || starts({'G', 'I', 'F', '8'}) || starts({'B', 'M'}) ||
                     starts({'8', 'B', 'P', 'S'}) || starts({0x53, 0x80, 0xF6, 0x34}) || starts({'#', '?'}) ||
                     starts({'P', '5'}) || starts({'P', '6'});
  const int type = b[2], bits = b[16];
  if (other || b[1] != 0 || (type != 2 && type != 3)) return;  // colour-mapped, run-length or no image
  // stb: 8 bits grey, 16 grey and alpha (type 3), 24 and 32 RGB(A); 15 and 16 bits RGB go another way.
  int bytes_a_pixel = 0;
  if (bits == 8) bytes_a_pixel = 1;
  else if (bits == 16 && type == 3) bytes_a_pixel = 2;
  else if (bits == 24 || bits == 32) bytes_a_pixel = bits / 8;
  if (bytes_a_pixel == 0) return;
  const unsigned width = b[12] | b[13] << 8, height = b[14] | b[15] << 8;
  const std::size_t start = 18 + b[0];  // after the header and the image ID (a colour map stb does not skip)
  const std::size_t need = std::size_t(width) * height * bytes_a_pixel;
  check_pixels_fit(name, "TGA", b.size() > start ? b.size() - start : 0, width, height, need);
}

void check_bmp_data(std::span<const unsigned char> b, const std::string& name) {
  if (b.size() < 26 || b[0] != 'B' || b[1] != 'M') return;
  auto le = [&](std::size_t at, int bytes) {
    std::uint32_t v = 0;
    for (int k = bytes - 1; k >= 0; --k) v = v << 8 | (at + k < b.size() ? b[at + k] : 0);
    return v;
  };
  const std::uint32_t offset = le(10, 4), header = le(14, 4);
  const bool core = header == 12;  // OS/2 1.x: 16-bit sizes
  const long long width = core ? le(18, 2) : static_cast<std::int32_t>(le(18, 4));
  const long long height = core ? le(20, 2) : std::llabs(static_cast<std::int32_t>(le(22, 4)));
  const std::uint32_t bits = core ? le(24, 2) : le(28, 2), compression = core ? 0 : le(30, 4);
  if (width <= 0 || height <= 0 || (compression != 0 && compression != 3)) return;
  long long row = 0;  // the bytes of a row's pixels, then its padding to 4 bytes
  if (bits == 1) row = (width + 7) / 8;
  else if (bits == 4) row = (width + 1) / 2;
  else if (bits == 8 || bits == 16 || bits == 24 || bits == 32) row = width * (bits / 8);
  else return;
  const long long stride = (row + 3) / 4 * 4;
  const unsigned long long need = offset + static_cast<unsigned long long>(stride) * (height - 1) + row;
  if (b.size() < need)
    throw decode_error(name, fmt::format("truncated BMP ({} bytes where its {}x{} pixels end at byte {})", b.size(),
                                         width, height, need));
}

void check_pfm(std::span<const unsigned char> b, const std::string& name, const Limits& limits) {
  if (b.size() < 3 || b[0] != 'P' || (b[1] != 'f' && b[1] != 'F') || !std::isspace(b[2])) return;
  if (b[2] != '\n') throw decode_error(name, "not a readable PFM (no line break after PF or Pf)");
  std::size_t p = 3;
  // As OpenCV's read_number: up to and past the next whitespace byte, or 2048 bytes without one.
  auto token = [&](const char* what) {
    std::string s;
    while (s.size() < 2048) {
      if (p >= b.size()) throw decode_error(name, fmt::format("truncated PFM (the header ends in its {})", what));
      if (std::isspace(b[p++])) break;
      s.push_back(static_cast<char>(b[p - 1]));
    }
    return s;
  };
  const std::string w = token("width"), h = token("height"), scale = token("scale");
  const long long width = std::strtoll(w.c_str(), nullptr, 10), height = std::strtoll(h.c_str(), nullptr, 10);
  if (width <= 0 || height <= 0) throw decode_error(name, fmt::format("not a readable PFM (size '{}' x '{}')", w, h));
  check_pixel_limit(name, width, height, limits);
  constexpr long long kSide = 1LL << 20, kPixels = 1LL << 30;  // OpenCV's CV_IO_MAX_IMAGE_WIDTH, _PIXELS
  if (width > kSide || height > kSide || width * height > kPixels)
    throw decode_error(
        name, fmt::format("PFM of {}x{} is larger than OpenCV reads (2^20 a side, 2^30 pixels)", width, height));
  const float factor = std::strtof(scale.c_str(), nullptr);  // OpenCV keeps it as a float
  if (!(std::fabs(factor) > 0) || !std::isfinite(factor))
    throw decode_error(name, fmt::format("not a readable PFM (scale '{}')", scale));
  const unsigned long long need = static_cast<unsigned long long>(width) * height * (b[1] == 'F' ? 3 : 1) * 4;
  check_pixels_fit(name, "PFM", b.size() - p, width, height, need);
}

}  // namespace tf::codec_checks
