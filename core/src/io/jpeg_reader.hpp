// The libjpeg reader (jpeg_reader.cpp), for the JPEG format's registration (format_jpeg.cpp).
#pragma once

#ifdef TF_HAVE_LIBJPEG
#include <memory>
#include <string>

#include "tilefilter/io/io.hpp"

namespace tf::io::jpeg {

// A reader on the JPEG at `path`; throws tf::Error when it cannot be read.
std::unique_ptr<ImageReader> jpeg_open(const std::string& path, const Limits& limits);

}  // namespace tf::io::jpeg
#endif
