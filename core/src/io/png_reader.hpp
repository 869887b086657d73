// The libpng reader (png_reader.cpp), for the PNG format's registration (format_png.cpp).
#pragma once

#ifdef TF_HAVE_LIBPNG
#include <memory>
#include <string>

#include "tilefilter/io/io.hpp"

namespace tf::io::png {

// A reader on the PNG at `path`; throws tf::Error when it cannot be read.
std::unique_ptr<ImageReader> png_open(const std::string& path, const Limits& limits);

}  // namespace tf::io::png
#endif
