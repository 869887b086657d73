// What the libpng reader and writer share (png_common.hpp).
#include "png_common.hpp"

#ifdef TF_HAVE_LIBPNG
#include <cstdio>

#include <png.h>

namespace tf::io::png {

[[noreturn]] void on_png_error(png_structp png, png_const_charp message) {
  auto* m = static_cast<PngMessage*>(png_get_error_ptr(png));
  if (m) std::snprintf(m->text, sizeof m->text, "%s", message ? message : "unknown error");
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

}  // namespace tf::io::png
#endif
