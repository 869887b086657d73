// The OpenCV half of the codecs, behind a small seam so core builds without OpenCV.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "tilefilter/io/codec.hpp"

namespace tf::opencv_codecs {
bool available();
// Whether the bytes start like a format OpenCV is asked to read (TIFF, WebP, PFM/PAM/PNM, JPEG 2000,
// OpenEXR, Sun raster). Everything else stays away from OpenCV: its GDCM (DICOM) reader sized a
// buffer from an 874-byte file's length field at 1.7 GB (found by fuzz_decode).
bool reads_signature(std::span<const unsigned char> bytes);
bool can_write(const std::string& ext, const Format& format);
Image decode(std::span<const unsigned char> bytes, const std::string& name, const Limits& limits,
             const PixelAllocator& alloc);
std::vector<unsigned char> encode(const std::string& ext, const ImageView& image, int quality);
}  // namespace tf::opencv_codecs
