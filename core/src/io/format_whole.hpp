// The whole-image codecs behind the formats that do not stream (stb, OpenCV, TurboJPEG in memory):
// registry.cpp wraps them in an ImageReader / ImageWriter that holds the whole image.
#pragma once
#include <cstddef>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "tilefilter/io/codec.hpp"

namespace tf {

std::string extension_of(const std::string& path);  // lower case, with the dot
// The file opened for reading, at its start, with its size in bytes: one open, and tf::Error naming the
// file when it is missing, a directory, unreadable or empty.
std::ifstream open_readable_file(const std::string& path, std::size_t& size);
// The whole file, opened by open_readable_file and read after limits.max_file_bytes (tf::Error naming the file).
std::vector<unsigned char> read_file(const std::string& path, const Limits& limits);
// The same into `into` (its memory reused where it has room).
void read_file(const std::string& path, const Limits& limits, std::vector<unsigned char>& into);

// Reads the file into memory and decodes it with stb / TurboJPEG / OpenCV; `codec` receives which.
Image decode_file_whole(const std::string& path, const Limits& limits, const PixelAllocator& alloc, std::string* codec);
Image decode_memory_whole(std::span<const unsigned char> bytes, const std::string& name, const Limits& limits,
                          const PixelAllocator& alloc, std::string* codec);

bool can_encode_whole(const std::string& path, const Format& format, std::string* why);
std::string whole_encoder_for(const std::string& path, const Format& format);
// The encoded bytes for `path`'s format. Throws tf::Error naming `path`.
std::vector<unsigned char> encode_whole(const std::string& path, const ImageView& image, const WriteOptions& options);

}  // namespace tf
