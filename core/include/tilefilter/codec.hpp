// Decoding and encoding. stb_image/stb_image_write are always built; TurboJPEG (libjpeg-turbo) takes
// over JPEG when present; OpenCV's imgcodecs adds TIFF, WebP, 16-bit PNG output and float TIFF when
// present. Limits are checked from the header, before any pixel memory is allocated.
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "tilefilter/image.hpp"

namespace tf {

struct Limits {
  long long max_pixels = 1LL << 30;             // 1 gigapixel
  std::size_t max_file_bytes = 4ULL << 30;      // 4 GiB
};

struct EncodeOptions {
  int quality = 95;  // JPEG / WebP
};

// Throws tf::Error naming the file and the reason.
Image decode_file(const std::string& path, const Limits& limits = {},
                  const PixelAllocator& alloc = default_allocator());
Image decode_memory(std::span<const unsigned char> bytes, const std::string& name, const Limits& limits = {},
                    const PixelAllocator& alloc = default_allocator());

// Writes atomically: a temporary file beside the target, renamed when complete.
void encode_file(const std::string& path, const ImageView& image, const EncodeOptions& options = {});

bool is_image_extension(const std::string& path);       // can we try to decode this file?
std::string codec_for(const std::string& path);         // decoder: "stb", "turbojpeg", "opencv"
std::string encoder_for(const std::string& path, const Format& format);  // what encode_file uses, same names
bool can_encode(const std::string& path, const Format& format, std::string* why = nullptr);
std::vector<std::string> readable_extensions();
bool have_opencv_codecs();
bool have_turbojpeg();

// JPEG through one named codec ("stb" or "turbojpeg"), past the automatic choice: for tests and
// benchmarks that compare the two. Throws tf::Error (InvalidArgument) for a codec not in this build.
Image decode_jpeg_with(const std::string& codec, std::span<const unsigned char> bytes, const std::string& name,
                       const Limits& limits = {}, const PixelAllocator& alloc = default_allocator());
std::vector<unsigned char> encode_jpeg_with(const std::string& codec, const ImageView& image, int quality);

// A fresh temporary name beside `path` (same directory, hidden, unique per process and call).
std::string temporary_name_for(const std::string& path);

// Writes `bytes` to a temporary_name_for(path) and renames it onto `path`: readers see the old
// file or the whole new one, never a part. Throws tf::Error (Io) naming `path` and the reason;
// nothing is left behind then.
void write_file_atomically(const std::string& path, std::span<const unsigned char> bytes);

}  // namespace tf
