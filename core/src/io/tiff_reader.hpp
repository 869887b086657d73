// The libtiff reader (tiff_reader.cpp), for the TIFF format's registration (format_tiff.cpp).
#pragma once

#ifdef TF_HAVE_LIBTIFF
#include <memory>
#include <string>

#include "tilefilter/io/io.hpp"

namespace tf::io::tiff {

// A reader on the first page of the TIFF at `path`; throws tf::Error when it cannot be read.
std::unique_ptr<ImageReader> tiff_open(const std::string& path, const Limits& limits);

}  // namespace tf::io::tiff
#endif
