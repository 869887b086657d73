// Checks every decoder runs before it allocates pixels or trusts its input; shared by codec.cpp
// (stb, OpenCV) and codec_turbojpeg.cpp so each idea has one implementation and one message.
#pragma once
#include <span>
#include <string>

#include "tilefilter/codec.hpp"
#include "tilefilter/error.hpp"

namespace tf::codec_checks {

// ErrorKind::Decode, "<name>: <why>".
Error decode_error(const std::string& name, const std::string& why);

// Throws ErrorKind::Limit when w x h exceeds limits.max_pixels. Header sizes are untrusted
// (up to 2^32-1 per side), so the product cannot overflow here.
void check_pixel_limit(const std::string& name, long long w, long long h, const Limits& limits);

// A complete JPEG has an end-of-image marker after its last start-of-scan; decoders pad or warn
// on missing data instead of failing, so a cut file is recognised here. True for non-JPEG bytes.
bool jpeg_looks_complete(std::span<const unsigned char> bytes);
// Throws "<name>: truncated JPEG (no end-of-image marker)" unless jpeg_looks_complete(bytes).
void check_jpeg_complete(std::span<const unsigned char> bytes, const std::string& name);

}  // namespace tf::codec_checks
