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

// stb's rule for "this is a JPEG": 0xFF, any number of 0xFF fill bytes, then 0xD8 (SOI).
bool looks_like_jpeg(std::span<const unsigned char> bytes);
// stb_image trusts the symbol counts of a JPEG Huffman table (DHT) and writes past its arrays when
// they add up to more than 256 (found by fuzz_decode). Throws a decode error for such a table, or
// one that runs past its segment; call before any stb function sees JPEG bytes.
void check_jpeg_huffman_tables(std::span<const unsigned char> bytes, const std::string& name);

}  // namespace tf::codec_checks
