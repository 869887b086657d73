// The libpng writer (png_writer.cpp), for the PNG format's registration (format_png.cpp).
#pragma once

#ifdef TF_HAVE_LIBPNG
#include <memory>
#include <string>

#include "tilefilter/io/io.hpp"

namespace tf::io::png {

// A writer of a `width` x `height` PNG at `path` (written to a temporary file, renamed on finish).
std::unique_ptr<ImageWriter> png_create(const std::string& path, int width, int height, Format format,
                                        const Metadata& metadata, const WriteOptions& options);

}  // namespace tf::io::png
#endif
