// The helpers both halves of the libtiff format share (tiff_common.hpp).
#include "tiff_common.hpp"

#ifdef TF_HAVE_LIBTIFF
#include <cstdio>
#include <mutex>

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

}  // namespace tf::io::tiff
#endif
