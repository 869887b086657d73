// Whole-image decoding and encoding. Files go through the format readers and writers of io.hpp
// (libtiff, libpng, libjpeg when built in); stb_image/stb_image_write are always built and serve
// the rest, with OpenCV's imgcodecs for WebP, PFM, JPEG 2000 and others when present. TurboJPEG
// decodes and encodes JPEG bytes in memory. Limits are checked from the header, before any pixel
// memory is allocated.
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "tilefilter/image/image.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/util/atomic_write.hpp"

namespace tf {

using EncodeOptions = WriteOptions;
inline EncodeOptions quality_only(int quality) {
  EncodeOptions o;
  o.quality = quality;
  return o;
}

// Decodes a whole file through open_image (io.hpp); the image must fit limits.max_pixels. `info`,
// when given, receives what the file held (metadata, stored channels, codec). Throws tf::Error
// naming the file and the reason.
Image decode_file(const std::string& path, const Limits& limits = {}, const PixelAllocator& alloc = default_allocator(),
                  ImageInfo* info = nullptr);
Image decode_memory(std::span<const unsigned char> bytes, const std::string& name, const Limits& limits = {},
                    const PixelAllocator& alloc = default_allocator());

// Writes atomically through create_image (io.hpp): the file appears under its name only when complete
// (tilefilter/util/atomic_write.hpp). `metadata` is written unless options.strip (formats that cannot hold it drop it).
// `note`, when given, receives the writer's note (ImageWriter::note()).
void encode_file(const std::string& path, const ImageView& image, const EncodeOptions& options = {},
                 const Metadata& metadata = {}, std::string* note = nullptr);

bool is_image_extension(const std::string& path);                        // can we try to decode this file?
std::string codec_for(const std::string& path);                          // decoder: "stb", "turbojpeg", "opencv"
std::string encoder_for(const std::string& path, const Format& format);  // what encode_file uses, same names
bool can_encode(const std::string& path, const Format& format, std::string* why = nullptr);
std::vector<std::string> readable_extensions();
bool have_opencv_codecs();
bool have_turbojpeg();

// JPEG through one named codec ("stb" or "turbojpeg"), past the automatic choice: for tests and
// benchmarks that compare the two. Throws tf::Error (InvalidArgument) for a codec not in this build.
Image decode_jpeg_with(const std::string& codec, std::span<const unsigned char> bytes, const std::string& name,
                       const Limits& limits = {}, const PixelAllocator& alloc = default_allocator());
// `subsampling` FromInput: the quality's rule (jpeg_subsampling, io.hpp).
std::vector<unsigned char> encode_jpeg_with(const std::string& codec, const ImageView& image, int quality,
                                            ChromaSubsampling subsampling = ChromaSubsampling::FromInput);

// A JPEG stream's header (libjpeg; no pixel is decoded): for choosing a decoder. Throws tf::Error
// (Decode) naming `name` when the bytes hold no readable JPEG header.
struct JpegStreamInfo {
  int width = 0, height = 0, components = 0, precision = 8;
  bool progressive = false, cmyk = false, gray = false;
  Metadata metadata;  // EXIF, XMP and ICC, as the JPEG reader finds them
  JpegCoding coding;  // its quality (estimated) and chroma subsampling
  // A multi-scan (progressive) file's DCT coefficients, which libjpeg gathers for the whole image before
  // the first row; 0 for a single-scan file, which decodes row by row.
  std::size_t coefficient_bytes = 0;
};
JpegStreamInfo jpeg_stream_info(std::span<const unsigned char> bytes, const std::string& name);

// A JPEG stream from another encoder (the GPU's) with `metadata` written into it as this program's
// JPEG writer writes it: EXIF and XMP in APP1, the ICC profile in APP2, after the start-of-image
// marker and a JFIF APP0 that follows it. Throws tf::Error (Decode) when `jpeg` is no JPEG stream.
std::vector<unsigned char> jpeg_with_metadata(std::span<const unsigned char> jpeg, const Metadata& metadata);
// The same into `out` (emptied first; its memory reused where it has room).
void jpeg_with_metadata(std::span<const unsigned char> jpeg, const Metadata& metadata, std::vector<unsigned char>& out);

}  // namespace tf
