// PNG on libpng 1.6: a streaming reader (png_reader.cpp) and writer (png_writer.cpp), registered here
// as one format; png_common.hpp holds what both use. Without libpng in the build the format is
// still sniffed and named, and answers available() == false.
#include <cstring>
#include <span>
#include <string>

#include <fmt/format.h>

#include "formats.hpp"
#include "png_common.hpp"

#ifdef TF_HAVE_LIBPNG
#include "png_reader.hpp"
#include "png_writer.hpp"
#endif

namespace tf::io {

namespace png {

bool png_sniff(std::span<const unsigned char> head) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  return head.size() >= 8 && std::memcmp(head.data(), sig, 8) == 0;
}

bool png_can_write(const Format& format, std::string* why) {
  const bool ok = (format.type == PixelType::U8 || format.type == PixelType::U16) &&
                  (format.channels == 1 || format.channels == 3 || format.channels == 4);
  if (!ok && why) *why = fmt::format("PNG holds 8- and 16-bit pixels, not {}", to_string(format));
  return ok;
}

}  // namespace png

namespace {

bool png_extension(const std::string& ext) { return ext == ".png"; }

}  // namespace

const FormatCodec& png_codec() {
#ifdef TF_HAVE_LIBPNG
  static const FormatCodec codec{"libpng",      [] { return true; }, png::png_sniff, png_extension,
                                 png::png_open, png::png_can_write,  png::png_create};
#else
  static const FormatCodec codec{"libpng", [] { return false; }, png::png_sniff, png_extension,
                                 nullptr,  png::png_can_write,   nullptr};
#endif
  return codec;
}

}  // namespace tf::io
