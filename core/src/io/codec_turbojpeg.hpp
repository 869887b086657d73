// The TurboJPEG (libjpeg-turbo) JPEG codec, behind a small seam so core builds without it; codec.cpp
// uses it for JPEG when available() and falls back to stb otherwise. Per core on this project's
// 2-core build machine it decodes about 2x and encodes 7-10x faster than stb (tf_jpeg_bench).
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tilefilter/io/codec.hpp"

namespace tf::turbojpeg_codec {

bool available();

// Decodes a JPEG straight into an Image from `alloc`: gray -> 1 channel, everything else -> RGB,
// as stb does. The pixel limit is checked from the header before any pixel memory exists.
// nullopt when the bytes are not a JPEG whose header TurboJPEG reads (stb then decides and
// words the error); throws tf::Error naming `name` for corrupt or truncated data.
std::optional<Image> decode(std::span<const unsigned char> bytes, const std::string& name, const Limits& limits,
                            const PixelAllocator& alloc);

// 8-bit gray, RGB or RGBA (alpha ignored, as stb does); throws tf::Error (Io) on failure.
// JPEG of `image` with jpeg_quality(options) and jpeg_subsampling(options) (io.hpp).
std::vector<unsigned char> encode(const ImageView& image, const WriteOptions& options);

}  // namespace tf::turbojpeg_codec
