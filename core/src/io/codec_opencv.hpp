// The OpenCV half of the codecs, behind a small seam so core builds without OpenCV.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "tilefilter/codec.hpp"

namespace tf::opencv_codecs {
bool available();
bool can_write(const std::string& ext, const Format& format);
Image decode(std::span<const unsigned char> bytes, const std::string& name, const Limits& limits,
             const PixelAllocator& alloc);
std::vector<unsigned char> encode(const std::string& ext, const ImageView& image, int quality);
}  // namespace tf::opencv_codecs
