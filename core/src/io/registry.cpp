// open_image / create_image: the file's first bytes pick the reader, the target's extension the
// writer. Streaming formats (format_*.cpp) come first; anything else is decoded or encoded whole by
// the stb / OpenCV / TurboJPEG codecs (codec.cpp) behind the same two interfaces.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "codec_checks.hpp"
#include "format_whole.hpp"
#include "formats.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/util/error.hpp"

namespace tf {

namespace {

const std::array<const io::FormatCodec*, 3>& all_formats() {
  static const std::array<const io::FormatCodec*, 3> formats{&io::tiff_codec(), &io::png_codec(), &io::jpeg_codec()};
  return formats;
}

// A format that cannot stream: decoded whole when opened.
class WholeReader final : public ImageReader {
 public:
  WholeReader(const std::string& path, const Limits& limits) {
    std::string codec;
    image_ = decode_file_whole(path, limits, default_allocator(), &codec);
    info_.width = image_.width();
    info_.height = image_.height();
    info_.format = image_.format();
    info_.stored_channels = image_.format().channels;
    info_.codec = codec;
    info_.access = RowAccess::Whole;
  }

  void read_rows(int y, const ImageView& rows) override {
    for (int r = 0; r < rows.height; ++r) std::memcpy(rows.row(r), image_.view().row(y + r), rows.row_bytes());
  }

 private:
  Image image_;
};

// A format that cannot stream: rows gather in memory and are encoded at finish(). Such formats
// (BMP, TGA, HDR, WebP, PFM through stb / OpenCV) get no metadata.
class WholeWriter final : public ImageWriter {
 public:
  WholeWriter(std::string path, int width, int height, Format format, const WriteOptions& options)
      : path_(std::move(path)), image_(width, height, format), options_(options) {}

  void write_rows(const ImageView& rows) override {
    if (next_row_ + rows.height > image_.height())
      throw Error(ErrorKind::InvalidArgument, fmt::format("{}: more rows written than the image has", path_));
    for (int r = 0; r < rows.height; ++r) std::memcpy(image_.view().row(next_row_ + r), rows.row(r), rows.row_bytes());
    next_row_ += rows.height;
  }

  void finish() override {
    if (next_row_ != image_.height())
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("{}: {} of {} rows written", path_, next_row_, image_.height()));
    write_file_atomically(path_, encode_whole(path_, image_.view(), options_));
  }

 private:
  std::string path_;
  Image image_;
  WriteOptions options_;
  int next_row_ = 0;
};

}  // namespace

namespace io {

const FormatCodec* format_for_extension(const std::string& ext) {
  for (const auto* f : all_formats())
    if (f->available() && f->has_extension(ext)) return f;
  return nullptr;
}

}  // namespace io

std::unique_ptr<ImageReader> open_image(const std::string& path, const Limits& limits) {
  std::array<unsigned char, 64> head{};
  std::size_t got = 0;
  {
    ReadableFile in(path);
    got = in.read(head.data(), head.size());
  }
  const std::span<const unsigned char> bytes(head.data(), got);
  for (const auto* f : all_formats())
    if (f->available() && f->sniff(bytes)) return f->open(path, limits);
  return std::make_unique<WholeReader>(path, limits);
}

std::unique_ptr<ImageWriter> create_image(const std::string& path, int width, int height, Format format,
                                          const Metadata& metadata, const WriteOptions& options) {
  if (width <= 0 || height <= 0)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("{}: cannot write an image of {}x{} pixels", path, width, height));
  std::string why;
  const auto* f = io::format_for_extension(extension_of(path));
  if (!(f ? f->can_write(format, &why) : can_encode_whole(path, format, &why)))
    throw Error(ErrorKind::InvalidArgument, fmt::format("{}: {}", path, why));
  if (f) return f->create(path, width, height, format, metadata, options);
  return std::make_unique<WholeWriter>(path, width, height, format, options);
}

bool writer_streams(const std::string& path) { return io::format_for_extension(extension_of(path)) != nullptr; }

void keep_input_compression(WriteOptions& options, const ImageInfo& input) {
  keep_input_coding(options, input.jpeg);
  if (!options.compression.empty() || input.codec != "libtiff" || input.compression.empty()) return;
  options.compression = input.compression;
  options.compression_from_input = true;
}

void keep_input_coding(WriteOptions& options, const JpegCoding& input) {
  if (options.quality == 0 && input.quality > 0) options.quality = input.quality;
  if (options.subsampling == ChromaSubsampling::FromInput) {
    options.subsampling = input.subsampling;
    options.jpeg_rgb = input.rgb;
  }
}

int jpeg_quality(const WriteOptions& options) {
  return options.quality == 0 ? kDefaultQuality : std::clamp(options.quality, 1, 100);
}

ChromaSubsampling jpeg_subsampling(const WriteOptions& options, int channels) {
  if (channels == 1) return ChromaSubsampling::S444;
  if (options.subsampling != ChromaSubsampling::FromInput) return options.subsampling;
  // Full-resolution colour from quality 90, as libjpeg-turbo's cjpeg and ImageMagick choose: whoever
  // asks for that much wants the detail.
  return jpeg_quality(options) >= 90 ? ChromaSubsampling::S444 : ChromaSubsampling::S420;
}

ChromaSubsampling parse_subsampling(const std::string& text) {
  std::string digits;
  for (char c : text)
    if (c != ':') digits += c;
  if (digits == "444") return ChromaSubsampling::S444;
  if (digits == "422") return ChromaSubsampling::S422;
  if (digits == "420") return ChromaSubsampling::S420;
  if (text == "input" || text == "same") return ChromaSubsampling::FromInput;
  throw Error(ErrorKind::InvalidArgument,
              fmt::format("subsampling '{}': choose 444, 422, 420 or input (the input's)", text));
}

const char* to_string(ChromaSubsampling s) {
  switch (s) {
    case ChromaSubsampling::S444: return "4:4:4";
    case ChromaSubsampling::S422: return "4:2:2";
    case ChromaSubsampling::S420: return "4:2:0";
    case ChromaSubsampling::FromInput: break;
  }
  return "input";
}

std::unique_ptr<ImageReader> ImageReader::open_level(int index) const {
  throw Error(ErrorKind::InvalidArgument, fmt::format("no reduced level {} ({} levels)", index, info_.levels.size()));
}

Image read_whole(ImageReader& reader, const PixelAllocator& alloc) {
  const ImageInfo& info = reader.info();
  Image img(info.width, info.height, info.format, alloc);
  reader.read_rows(0, img.view());
  return img;
}

void parse_compression(const std::string& text, WriteOptions& o) {
  if (text.empty()) return;
  const auto colon = text.find(':');
  const std::string method = text.substr(0, colon);
  const std::string level = colon == std::string::npos ? "" : text.substr(colon + 1);
  auto parse_level = [&](const std::string& digits) {
    char* end = nullptr;
    const long v = std::strtol(digits.c_str(), &end, 10);
    const bool jpeg = method == "jpeg";
    if (digits.empty() || *end || v < (jpeg ? 1 : 0) || v > (jpeg ? 100 : 22))
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("--compression '{}': the level must be 0-9 (zstd 1-22, jpeg a quality 1-100)", text));
    return static_cast<int>(v);
  };
  if (!method.empty() && std::isdigit(static_cast<unsigned char>(method[0]))) {
    o.level = parse_level(method);
  } else {
    o.compression = method;
    if (!level.empty()) o.level = parse_level(level);
  }
}

}  // namespace tf
