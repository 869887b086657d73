// TIFF on libtiff: a random-access reader (tiff_reader.cpp) and a streaming writer (tiff_writer.cpp),
// registered here as one format; tiff_common.hpp holds the helpers both use.
#include "formats.hpp"

#ifdef TF_HAVE_LIBTIFF
#include <memory>
#include <span>
#include <string>

#include <fmt/format.h>

#include "tiff_reader.hpp"
#include "tiff_writer.hpp"
#endif

namespace tf::io {

#ifdef TF_HAVE_LIBTIFF
namespace {

// ---------------------------------------------------------------------------------------------

bool tiff_sniff(std::span<const unsigned char> h) {
  if (h.size() < 4) return false;
  return (h[0] == 'I' && h[1] == 'I' && (h[2] == 42 || h[2] == 43) && h[3] == 0) ||
         (h[0] == 'M' && h[1] == 'M' && h[2] == 0 && (h[3] == 42 || h[3] == 43));
}

bool tiff_extension(const std::string& ext) { return ext == ".tif" || ext == ".tiff"; }

bool tiff_can_write(const Format& f, std::string* why) {
  if (f.channels == 1 || f.channels == 3 || f.channels == 4) return true;
  if (why) *why = fmt::format("TIFF output takes 1, 3 or 4 channels, not {}", f.channels);
  return false;
}

}  // namespace

const FormatCodec& tiff_codec() {
  static const FormatCodec codec{"libtiff",       [] { return true; }, tiff_sniff,       tiff_extension,
                                 tiff::tiff_open, tiff_can_write,      tiff::tiff_create};
  return codec;
}

#else  // no libtiff in this build

const FormatCodec& tiff_codec() {
  static const FormatCodec codec{"libtiff", [] { return false; }, nullptr, nullptr, nullptr, nullptr, nullptr};
  return codec;
}

#endif

}  // namespace tf::io
