// What the libtiff reader (tiff_reader.cpp) and writer (tiff_writer.cpp) both use: libtiff's
// messages turned into one tf::Error, opening a file with them, and a deleter that closes a handle.
#pragma once

#ifdef TF_HAVE_LIBTIFF
#include <cstdarg>
#include <string>
#include <utility>

#include <tiffio.h>

#include "metadata.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::io::tiff {

// ---------------------------------------------------------------------------------------------
// libtiff messages: every handle gets its own error/warning handlers (TIFFOpenOptions, libtiff 4.5).
// Errors are kept (the first one since clear()) and become part of one tf::Error; warnings are
// dropped, so nothing reaches stderr.

struct TiffMessages {
  std::string error;
  void clear() { error.clear(); }
};

int on_tiff_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap);
int on_tiff_warning(TIFF*, void*, const char*, const char*, va_list);
TIFF* open_tiff(const std::string& path, const char* mode, TiffMessages* msgs);

// "<reason>" from libtiff without a repeated file name in front.
std::string reason(const TiffMessages& m, const std::string& path, const char* fallback);

// A JPEG-compressed image's coding: the quality of its tables (the JPEGTables tag, else the first
// strip's or tile's own stream), its YCbCr subsampling, or RGB storage (`photometric`).
JpegCoding jpeg_coding(TIFF* t, int photometric);

[[noreturn]] void fail(ErrorKind kind, const std::string& path, const std::string& why);

// The text tags a TIFF keeps in its own IFD and an EXIF block in IFD0, each with its Ifd0Text field:
// the reader gathers them into EXIF, the writer sets them from it.
inline constexpr std::pair<ttag_t, std::string Ifd0Text::*> kIfd0TextTags[] = {
    {TIFFTAG_MAKE, &Ifd0Text::make},
    {TIFFTAG_MODEL, &Ifd0Text::model},
    {TIFFTAG_ARTIST, &Ifd0Text::artist},
    {TIFFTAG_COPYRIGHT, &Ifd0Text::copyright},
    {TIFFTAG_DATETIME, &Ifd0Text::date_time},
    {TIFFTAG_SOFTWARE, &Ifd0Text::software},
    {TIFFTAG_IMAGEDESCRIPTION, &Ifd0Text::description}};

struct TiffClose {
  void operator()(TIFF* t) const { TIFFClose(t); }
};

}  // namespace tf::io::tiff
#endif
