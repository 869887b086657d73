// The libtiff streaming writer (tiff_writer.cpp), for the TIFF format's registration (format_tiff.cpp).
#pragma once

#ifdef TF_HAVE_LIBTIFF
#include <memory>
#include <string>

#include "tilefilter/io/io.hpp"

namespace tf::io::tiff {

// A writer of a `width` x `height` TIFF at `path` (written to a temporary file, renamed on finish).
std::unique_ptr<ImageWriter> tiff_create(const std::string& path, int width, int height, Format format,
                                         const Metadata& metadata, const WriteOptions& options);

}  // namespace tf::io::tiff
#endif
