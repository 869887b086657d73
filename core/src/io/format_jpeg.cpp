// JPEG on libjpeg(-turbo): a streaming reader (jpeg_reader.cpp) and writer (jpeg_writer.cpp),
// registered here as one format; jpeg_common.hpp holds what both use. Without libjpeg in the build
// the format is still sniffed and named, and answers available() == false; the in-memory helpers
// (jpeg_stream_info, jpeg_with_metadata) then throw.
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "formats.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/error.hpp"

#include "jpeg_reader.hpp"
#include "jpeg_writer.hpp"

namespace tf::io {

namespace jpeg {

bool jpeg_can_write(const Format& format, std::string* why) {
  const bool ok =
      format.type == PixelType::U8 && (format.channels == 1 || format.channels == 3 || format.channels == 4);
  if (!ok && why) *why = fmt::format("JPEG holds 8-bit pixels, not {}", to_string(format));
  return ok;
}

}  // namespace jpeg

namespace {

bool jpeg_sniff(std::span<const unsigned char> head) {
  return head.size() >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF;
}

bool jpeg_extension(const std::string& ext) { return ext == ".jpg" || ext == ".jpeg"; }

}  // namespace

const FormatCodec& jpeg_codec() {
#ifdef TF_HAVE_LIBJPEG
  using namespace jpeg;
  static const FormatCodec codec{"libjpeg", [] { return true; }, jpeg_sniff, jpeg_extension,
                                 jpeg_open, jpeg_can_write,      jpeg_create};
#else
  static const FormatCodec codec{"libjpeg", [] { return false; }, jpeg_sniff, jpeg_extension,
                                 nullptr,   jpeg::jpeg_can_write, nullptr};
#endif
  return codec;
}

}  // namespace tf::io

#ifndef TF_HAVE_LIBJPEG
namespace tf {

JpegStreamInfo jpeg_stream_info(std::span<const unsigned char>, const std::string& name) {
  throw Error(ErrorKind::Decode, fmt::format("{}: this build has no libjpeg to read JPEG headers", name));
}
std::vector<unsigned char> jpeg_with_metadata(std::span<const unsigned char>, const Metadata&) {
  throw Error(ErrorKind::Internal, "this build has no libjpeg to write JPEG metadata");
}
void jpeg_with_metadata(std::span<const unsigned char>, const Metadata&, std::vector<unsigned char>&) {
  throw Error(ErrorKind::Internal, "this build has no libjpeg to write JPEG metadata");
}

}  // namespace tf
#endif
