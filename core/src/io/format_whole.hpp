// The whole-image codecs behind the formats that do not stream (stb, OpenCV, TurboJPEG in memory):
// registry.cpp wraps them in an ImageReader / ImageWriter that holds the whole image.
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "tilefilter/io/codec.hpp"

namespace tf {

std::string extension_of(const std::string& path);  // lower case, with the dot
// A file open for reading, at its start: one open and one fstat, and tf::Error naming the file when it is
// missing, a directory, unreadable or empty.
class ReadableFile {
 public:
  explicit ReadableFile(const std::string& path);
  ~ReadableFile();
  ReadableFile(const ReadableFile&) = delete;
  ReadableFile& operator=(const ReadableFile&) = delete;
  std::size_t size() const { return size_; }  // in bytes, when it was opened
  // Up to `n` bytes from where the last read ended; fewer only at the file's end. tf::Error (Io) on a failed read.
  std::size_t read(void* data, std::size_t n);

 private:
  std::string path_;
  int fd_ = -1;
  std::size_t size_ = 0;
};
// The whole file, opened as a ReadableFile and read after limits.max_file_bytes (tf::Error naming the file).
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
