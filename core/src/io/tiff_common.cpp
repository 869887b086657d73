// The helpers both halves of the libtiff format share (tiff_common.hpp).
#include "tiff_common.hpp"

#include "formats.hpp"

#ifdef TF_HAVE_LIBTIFF
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <vector>

#include <fmt/format.h>

namespace tf::io::tiff {

int on_tiff_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* m = static_cast<TiffMessages*>(user);
  if (m && m->error.empty()) {
    char buf[512];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    m->error = buf;
    if (m->error.empty() && module) m->error = module;
  }
  return 1;
}

int on_tiff_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

TIFF* open_tiff(const std::string& path, const char* mode, TiffMessages* msgs) {
#if TIFFLIB_VERSION >= 20221213
  TIFFOpenOptions* o = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(o, on_tiff_error, msgs);
  TIFFOpenOptionsSetWarningHandlerExtR(o, on_tiff_warning, msgs);
  TIFF* t = TIFFOpenExt(path.c_str(), mode, o);
  TIFFOpenOptionsFree(o);
  return t;
#else
  // Older libtiff: no per-handle handlers; keep stderr quiet, reasons are then generic.
  static std::once_flag once;
  std::call_once(once, [] {
    TIFFSetErrorHandler(nullptr);
    TIFFSetWarningHandler(nullptr);
  });
  (void)msgs;
  return TIFFOpen(path.c_str(), mode);
#endif
}

// "<reason>" from libtiff without a repeated file name in front.
std::string reason(const TiffMessages& m, const std::string& path, const char* fallback) {
  std::string r = m.error.empty() ? std::string(fallback) : m.error;
  if (r.rfind(path + ": ", 0) == 0) r.erase(0, path.size() + 2);
  while (!r.empty() && (r.back() == '.' || r.back() == '\n' || r.back() == ' ')) r.pop_back();
  return r;
}

[[noreturn]] void fail(ErrorKind kind, const std::string& path, const std::string& why) {
  throw Error(kind, fmt::format("{}: {}", path, why));
}

JpegCoding jpeg_coding(TIFF* t, int photometric) {
  JpegCoding c;
  std::uint32_t count = 0;
  void* tables = nullptr;
  if (TIFFGetField(t, TIFFTAG_JPEGTABLES, &count, &tables) && tables && count > 0) {
    c = jpeg_header_coding({static_cast<const unsigned char*>(tables), count});
  } else {
    // The tables lead the stream: its first 64 KiB hold them.
    std::uint64_t* counts = nullptr;
    const bool tiled = TIFFIsTiled(t);
    const std::uint64_t size =
        TIFFGetField(t, tiled ? TIFFTAG_TILEBYTECOUNTS : TIFFTAG_STRIPBYTECOUNTS, &counts) && counts ? counts[0] : 0;
    std::vector<unsigned char> head(static_cast<std::size_t>(std::min<std::uint64_t>(size, 64 << 10)));
    const tmsize_t got = head.empty() ? 0
                         : tiled      ? TIFFReadRawTile(t, 0, head.data(), static_cast<tmsize_t>(head.size()))
                                      : TIFFReadRawStrip(t, 0, head.data(), static_cast<tmsize_t>(head.size()));
    if (got > 0) c = jpeg_header_coding({head.data(), static_cast<std::size_t>(got)});
  }
  if (photometric == PHOTOMETRIC_RGB) {
    c.rgb = true;
    c.subsampling = ChromaSubsampling::S444;
  } else if (photometric == PHOTOMETRIC_YCBCR) {
    std::uint16_t h = 2, v = 2;
    TIFFGetFieldDefaulted(t, TIFFTAG_YCBCRSUBSAMPLING, &h, &v);
    c.subsampling = h == 1 && v == 1   ? ChromaSubsampling::S444
                    : h == 2 && v == 1 ? ChromaSubsampling::S422
                                       : ChromaSubsampling::S420;
  } else {
    c.subsampling = ChromaSubsampling::FromInput;
  }
  return c;
}

}  // namespace tf::io::tiff
#endif
