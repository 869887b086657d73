// The libjpeg writer (jpeg_writer.cpp), for the JPEG format's registration (format_jpeg.cpp).
#pragma once
#include <memory>
#include <string>

#include "tilefilter/io/io.hpp"

namespace tf::io::jpeg {

// Whether JPEG holds `format` (8-bit gray, RGB or RGBA written as its RGB); `why` says why not.
bool jpeg_can_write(const Format& format, std::string* why);

#ifdef TF_HAVE_LIBJPEG
// A writer of a JPEG at `path` (temporary file + rename); throws tf::Error when it cannot be made.
std::unique_ptr<ImageWriter> jpeg_create(const std::string& path, int width, int height, Format format,
                                         const Metadata& metadata, const WriteOptions& options);

#endif
}  // namespace tf::io::jpeg
