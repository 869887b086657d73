// The file formats behind open_image / create_image: one file each (format_tiff.cpp, format_png.cpp,
// format_jpeg.cpp; TIFF's reader and writer live in tiff_reader.cpp and tiff_writer.cpp, PNG's in
// png_reader.cpp and png_writer.cpp, and format_tiff.cpp / format_png.cpp register them), registered
// in registry.cpp. A format whose library is not in the build answers available() == false and is
// never asked anything else. Each format keeps its safety checks inside its library's own error
// handling (libtiff/libpng/libjpeg error handlers turned into tf::Error).
#pragma once
#include <memory>
#include <span>
#include <string>

#include "tilefilter/io/io.hpp"

namespace tf::io {

struct FormatCodec {
  const char* name;                                    // "libtiff"
  bool (*available)();                                 // its library is in this build
  bool (*sniff)(std::span<const unsigned char> head);  // first bytes of a file (at least 16 when the file has them)
  bool (*has_extension)(const std::string& ext);       // lower case, with the dot: ".tif"
  std::unique_ptr<ImageReader> (*open)(const std::string& path, const Limits& limits);
  bool (*can_write)(const Format& format, std::string* why);
  // Writes to a temporary file beside `path` (AtomicFile) and renames it at finish().
  std::unique_ptr<ImageWriter> (*create)(const std::string& path, int width, int height, Format format,
                                         const Metadata& metadata, const WriteOptions& options);
};

const FormatCodec& tiff_codec();
const FormatCodec& png_codec();
const FormatCodec& jpeg_codec();

}  // namespace tf::io

namespace tf::io {

// The streaming format in this build that writes files with this extension (".tif"), or nullptr.
const FormatCodec* format_for_extension(const std::string& ext);

// The quality and subsampling of a JPEG stream's header, or of a tables-only stream (a TIFF's
// JPEGTables: quality alone); JpegCoding{} when libjpeg cannot read it (or this build has no libjpeg).
JpegCoding jpeg_header_coding(std::span<const unsigned char> bytes);

}  // namespace tf::io
