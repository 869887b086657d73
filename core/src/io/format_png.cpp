// PNG on libpng 1.6, row by row. Reading: 8- and 16-bit; gray stays one channel; gray+alpha is
// delivered as RGBA (stored_channels 2); palette becomes RGB, or RGBA when it has a tRNS chunk;
// tRNS on gray or RGB becomes an alpha channel as well (gray+tRNS: RGBA, stored_channels 2; as
// stb does); bit depths below 8 are expanded to 8; 16-bit samples come in host order.
// Non-interlaced files stream (png_read_row); Adam7-interlaced ones cannot, and are decoded whole
// when opened, against limits.max_pixels. Metadata: eXIf, iCCP and the XMP iTXt/tEXt chunk found
// before the image data (chunks after IDAT are not seen by a streaming reader).
//
// libpng reports errors by longjmp. No C++ exception may cross its C frames, so every call into
// libpng runs inside png_ok(), which holds the setjmp; the error handler records the message and
// jumps back there, and the caller turns it into tf::Error. Warnings are dropped.
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "formats.hpp"

#ifdef TF_HAVE_LIBPNG
#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <csetjmp>
#include <cstdio>
#include <optional>
#include <vector>

#include <png.h>

#include "atomic_file.hpp"
#include "codec_checks.hpp"
#include "metadata.hpp"
#include "tilefilter/error.hpp"
#endif

namespace tf::io {

namespace {

bool png_sniff(std::span<const unsigned char> head) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  return head.size() >= 8 && std::memcmp(head.data(), sig, 8) == 0;
}

bool png_extension(const std::string& ext) { return ext == ".png"; }

bool png_can_write(const Format& format, std::string* why) {
  const bool ok = (format.type == PixelType::U8 || format.type == PixelType::U16) &&
                  (format.channels == 1 || format.channels == 3 || format.channels == 4);
  if (!ok && why) *why = fmt::format("PNG holds 8- and 16-bit pixels, not {}", to_string(format));
  return ok;
}

#ifdef TF_HAVE_LIBPNG

constexpr const char* kXmpKey = "XML:com.adobe.xmp";
constexpr bool kLittleEndian = std::endian::native == std::endian::little;

// Where the error handler leaves libpng's message (no allocation between the error and the jump).
struct PngMessage {
  char text[256] = {};
};

[[noreturn]] void on_png_error(png_structp png, png_const_charp message) {
  auto* m = static_cast<PngMessage*>(png_get_error_ptr(png));
  if (m) std::snprintf(m->text, sizeof m->text, "%s", message ? message : "unknown error");
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

// Runs f (calls into libpng only: nothing with a destructor may live in it) under a setjmp;
// false when libpng reported an error.
template <class F> bool png_ok(png_structp png, F&& f) {
  if (setjmp(png_jmpbuf(png))) return false;
  f();
  return true;
}

// libpng's read or write state with its info struct (and the file being read), released even when
// a constructor throws half way.
struct PngReadState {
  std::FILE* file = nullptr;
  png_structp png = nullptr;
  png_infop info = nullptr;
  PngReadState() = default;
  PngReadState(const PngReadState&) = delete;
  PngReadState& operator=(const PngReadState&) = delete;
  ~PngReadState() {
    if (png) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
    if (file) std::fclose(file);
  }
};

struct PngWriteState {
  png_structp png = nullptr;
  png_infop info = nullptr;
  PngWriteState() = default;
  PngWriteState(const PngWriteState&) = delete;
  PngWriteState& operator=(const PngWriteState&) = delete;
  ~PngWriteState() { release(); }
  void release() {
    if (png) png_destroy_write_struct(&png, info ? &info : nullptr);
    png = nullptr;
    info = nullptr;
  }
};

class PngReader final : public ImageReader {
 public:
  PngReader(const std::string& path, const Limits& limits) : path_(path) {
    state_.file = std::fopen(path.c_str(), "rb");
    if (!state_.file) throw Error(ErrorKind::Io, fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
    // The signature and the IHDR chunk (always first): its size is checked here, before libpng
    // reads on (a header with nothing after it would otherwise fail as truncated, not as too large).
    unsigned char head[29] = {};
    const std::size_t n = std::fread(head, 1, sizeof head, state_.file);
    if (n == 0) throw Error(ErrorKind::Decode, fmt::format("{}: empty file (0 bytes)", path));
    if (!png_sniff({head, n})) throw Error(ErrorKind::Decode, fmt::format("{}: not a PNG file", path));
    if (n == sizeof head && std::memcmp(head + 12, "IHDR", 4) == 0) {
      auto be32 = [&](int at) {
        return (std::uint32_t(head[at]) << 24) | (std::uint32_t(head[at + 1]) << 16) |
               (std::uint32_t(head[at + 2]) << 8) | head[at + 3];
      };
      Limits check = limits;
      if (head[28] == PNG_INTERLACE_NONE) check.max_pixels = limits.max_stream_pixels;
      codec_checks::check_pixel_limit(path, be32(16), be32(20), check);
    }
    if (std::fseek(state_.file, 8, SEEK_SET) != 0)
      throw Error(ErrorKind::Io, fmt::format("{}: cannot seek ({})", path, std::strerror(errno)));
    state_.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &message_, on_png_error, on_png_warning);
    if (state_.png) state_.info = png_create_info_struct(state_.png);
    if (!state_.png || !state_.info) throw Error(ErrorKind::Internal, fmt::format("{}: libpng: out of memory", path));

    // The size check is ours (against the caller's limits), so libpng's own default of a million
    // pixels a side is lifted; PNG's format limit of 2^31-1 stays.
    png_structp png = state_.png;
    png_infop info = state_.info;
    std::FILE* file = state_.file;
    if (!png_ok(png, [&] {
          png_set_user_limits(png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
          png_init_io(png, file);
          png_set_sig_bytes(png, 8);
          png_read_info(png, info);
        }))
      fail();

    png_uint_32 w = 0, h = 0;
    int depth = 0, color = 0, interlace = 0;
    png_get_IHDR(png, info, &w, &h, &depth, &color, &interlace, nullptr, nullptr);
    if (w == 0 || h == 0 || w > INT_MAX || h > INT_MAX)
      throw Error(ErrorKind::Decode, fmt::format("{}: PNG of {}x{} pixels", path, w, h));
    const bool interlaced = interlace != PNG_INTERLACE_NONE;
    // Again from libpng's reading (the same numbers): an interlaced file is held whole, the
    // others one row at a time.
    Limits check = limits;
    if (!interlaced) check.max_pixels = limits.max_stream_pixels;
    codec_checks::check_pixel_limit(path, w, h, check);

    const bool trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    int channels = 0, stored = 0;
    switch (color) {
      case PNG_COLOR_TYPE_PALETTE: channels = stored = trns ? 4 : 3; break;
      case PNG_COLOR_TYPE_GRAY: channels = trns ? 4 : 1, stored = trns ? 2 : 1; break;
      case PNG_COLOR_TYPE_GRAY_ALPHA: channels = 4, stored = 2; break;
      case PNG_COLOR_TYPE_RGB: channels = stored = trns ? 4 : 3; break;
      case PNG_COLOR_TYPE_RGB_ALPHA: channels = stored = 4; break;
      default: throw Error(ErrorKind::Decode, fmt::format("{}: PNG of unknown color type {}", path, color));
    }
    const bool sixteen = depth == 16;
    if (!png_ok(png, [&] {
          if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
          if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
          if (trns) png_set_tRNS_to_alpha(png);
          if (channels == 4 && (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA))
            png_set_gray_to_rgb(png);
          if (sixteen && kLittleEndian) png_set_swap(png);
          if (interlaced) png_set_interlace_handling(png);
          png_read_update_info(png, info);
        }))
      fail();

    info_.width = static_cast<int>(w);
    info_.height = static_cast<int>(h);
    info_.format = Format{sixteen ? PixelType::U16 : PixelType::U8, channels};
    info_.stored_channels = stored;
    info_.codec = "libpng";
    info_.access = interlaced ? RowAccess::Whole : RowAccess::Sequential;
    if (png_get_rowbytes(png, info) != static_cast<std::size_t>(w) * info_.format.pixel_bytes() ||
        png_get_channels(png, info) != channels)
      throw Error(ErrorKind::Internal, fmt::format("{}: libpng rows are not {}", path, to_string(info_.format)));
    read_metadata();

    if (interlaced) {
      whole_ = Image(info_.width, info_.height, info_.format);
      std::vector<png_bytep> rows(h);
      for (png_uint_32 y = 0; y < h; ++y) rows[y] = reinterpret_cast<png_bytep>(whole_.view().row(static_cast<int>(y)));
      png_bytepp pointers = rows.data();
      if (!png_ok(png, [&] { png_read_image(png, pointers); })) fail();
    }
  }

  void read_rows(int y, const ImageView& rows) override {
    if (rows.width != info_.width || rows.format != info_.format || y < 0 || rows.height < 0 ||
        y + rows.height > info_.height)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("{}: rows {}..{} of a {}x{} {} image asked as {}", path_, y, y + rows.height, info_.width,
                              info_.height, to_string(info_.format), to_string(rows.format)));
    if (!whole_.empty()) {
      for (int r = 0; r < rows.height; ++r) std::memcpy(rows.row(r), whole_.view().row(y + r), rows.row_bytes());
      return;
    }
    if (failed_) throw Error(ErrorKind::Decode, fmt::format("{}: cannot read on after an error", path_));
    if (y != next_row_)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("{}: PNG rows come in order: row {} asked, row {} is next", path_, y, next_row_));
    png_structp png = state_.png;
    const ImageView band = rows;
    if (!png_ok(png, [&] {
          for (int r = 0; r < band.height; ++r) png_read_row(png, reinterpret_cast<png_bytep>(band.row(r)), nullptr);
        }))
      fail();
    next_row_ += rows.height;
  }

 private:
  [[noreturn]] void fail() {
    failed_ = true;
    throw Error(ErrorKind::Decode, fmt::format("{}: truncated or corrupt PNG ({})", path_, message_.text));
  }

  void read_metadata() {
    Metadata& m = info_.metadata;
    png_uint_32 exif_size = 0;
    png_bytep exif = nullptr;
    if (png_get_eXIf_1(state_.png, state_.info, &exif_size, &exif) && exif && exif_size > 0) {
      m.exif.assign(exif, exif + exif_size);
      m.orientation = exif_orientation(m.exif);
    }
    png_charp name = nullptr;
    int compression = 0;
    png_bytep profile = nullptr;
    png_uint_32 profile_size = 0;
    if (png_get_iCCP(state_.png, state_.info, &name, &compression, &profile, &profile_size) && profile &&
        profile_size > 0)
      m.icc.assign(profile, profile + profile_size);
    png_textp text = nullptr;
    int count = 0;
    png_get_text(state_.png, state_.info, &text, &count);
    for (int i = 0; i < count; ++i)
      if (text[i].key && text[i].text && std::strcmp(text[i].key, kXmpKey) == 0) m.xmp = text[i].text;
  }

  std::string path_;
  PngReadState state_;
  PngMessage message_;
  Image whole_;  // interlaced files
  int next_row_ = 0;
  bool failed_ = false;
};

class PngWriter final : public ImageWriter {
 public:
  PngWriter(const std::string& path, int width, int height, Format format, const Metadata& metadata,
            const WriteOptions& options)
      : width_(width), height_(height), format_(format), file_(path) {
    std::string why;
    if (!png_can_write(format, &why)) throw Error(ErrorKind::InvalidArgument, fmt::format("{}: {}", path, why));
    if (width <= 0 || height <= 0 || static_cast<unsigned>(width) > PNG_UINT_31_MAX)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("{}: cannot write a PNG of {}x{} pixels", path, width, height));
    gray_alpha_ = options.gray_alpha && format.channels == 4;
    if (gray_alpha_) scratch_.resize(static_cast<std::size_t>(width) * 2 * bytes_per_sample(format.type));

    state_.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &message_, on_png_error, on_png_warning);
    if (state_.png) state_.info = png_create_info_struct(state_.png);
    if (!state_.png || !state_.info) throw Error(ErrorKind::Internal, fmt::format("{}: libpng: out of memory", path));

    // Metadata, prepared here (C++), handed to libpng below. The orientation travels in the EXIF.
    std::vector<unsigned char> exif, icc;
    std::string xmp;
    if (!options.strip) {
      exif = metadata.exif;
      if (exif_orientation(exif) != metadata.orientation) exif = exif_with_orientation(exif, metadata.orientation);
      icc = metadata.icc;
      xmp = metadata.xmp;
    }
    png_text xmp_text{};
    xmp_text.compression = PNG_ITXT_COMPRESSION_NONE;
    xmp_text.key = const_cast<png_charp>(kXmpKey);
    xmp_text.text = xmp.data();
    xmp_text.itxt_length = xmp.size();

    const int color = format.channels == 1   ? PNG_COLOR_TYPE_GRAY
                      : format.channels == 3 ? PNG_COLOR_TYPE_RGB
                      : gray_alpha_          ? PNG_COLOR_TYPE_GRAY_ALPHA
                                             : PNG_COLOR_TYPE_RGB_ALPHA;
    const int depth = format.type == PixelType::U16 ? 16 : 8;
    const int level = options.level < 0 ? -1 : std::min(options.level, 9);
    png_structp png = state_.png;
    png_infop info = state_.info;
    std::FILE* stream = file_.stream();
    const png_uint_32 w = static_cast<png_uint_32>(width), h = static_cast<png_uint_32>(height);
    if (!png_ok(png, [&] {
          // A metadata block libpng finds malformed (an ICC profile for the wrong colour space)
          // is left out with a warning instead of failing the image.
          png_set_benign_errors(png, 1);
          png_init_io(png, stream);
          png_set_IHDR(png, info, w, h, depth, color, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                       PNG_FILTER_TYPE_DEFAULT);
          if (level >= 0) png_set_compression_level(png, level);
          if (!exif.empty()) png_set_eXIf_1(png, info, static_cast<png_uint_32>(exif.size()), exif.data());
          if (!icc.empty())
            png_set_iCCP(png, info, "ICC profile", PNG_COMPRESSION_TYPE_BASE, icc.data(),
                         static_cast<png_uint_32>(icc.size()));
          if (!xmp.empty()) png_set_text(png, info, &xmp_text, 1);
          png_write_info(png, info);
          if (depth == 16 && kLittleEndian) png_set_swap(png);
        }))
      fail();
  }

  void write_rows(const ImageView& rows) override {
    if (rows.width != width_ || rows.format != format_ || next_row_ + rows.height > height_)
      throw Error(
          ErrorKind::InvalidArgument,
          fmt::format("{}: {} rows of {}x{} {} do not continue a {}x{} {} image at row {}", file_.target(), rows.height,
                      rows.width, rows.height, to_string(rows.format), width_, height_, to_string(format_), next_row_));
    if (failed_) throw Error(ErrorKind::Io, fmt::format("{}: cannot write on after an error", file_.target()));
    png_structp png = state_.png;
    const ImageView band = rows;
    if (!gray_alpha_) {
      if (!png_ok(png, [&] {
            for (int r = 0; r < band.height; ++r) png_write_row(png, reinterpret_cast<png_const_bytep>(band.row(r)));
          }))
        fail();
    } else {
      // Gray+alpha written from RGBA: the gray is the first channel (R = G = B for such input).
      const std::size_t sample = bytes_per_sample(format_.type);
      png_bytep ga = scratch_.data();
      for (int r = 0; r < band.height; ++r) {
        const auto* in = reinterpret_cast<const unsigned char*>(band.row(r));
        for (int x = 0; x < width_; ++x) {
          std::memcpy(ga + (2 * x) * sample, in + (4 * x) * sample, sample);
          std::memcpy(ga + (2 * x + 1) * sample, in + (4 * x + 3) * sample, sample);
        }
        if (!png_ok(png, [&] { png_write_row(png, ga); })) fail();
      }
    }
    next_row_ += rows.height;
  }

  void finish() override {
    if (failed_) throw Error(ErrorKind::Io, fmt::format("{}: cannot finish after an error", file_.target()));
    if (next_row_ != height_)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("{}: {} of {} rows written", file_.target(), next_row_, height_));
    png_structp png = state_.png;
    if (!png_ok(png, [&] { png_write_end(png, nullptr); })) fail();
    state_.release();
    file_.commit();
  }

 private:
  [[noreturn]] void fail() {
    failed_ = true;
    throw Error(ErrorKind::Io, fmt::format("{}: cannot write PNG ({})", file_.target(), message_.text));
  }

  int width_, height_;
  Format format_;
  AtomicFile file_;
  PngWriteState state_;  // after file_: destroyed before the temporary file is removed
  PngMessage message_;
  std::vector<unsigned char> scratch_;
  bool gray_alpha_ = false;
  bool failed_ = false;
  int next_row_ = 0;
};

std::unique_ptr<ImageReader> png_open(const std::string& path, const Limits& limits) {
  return std::make_unique<PngReader>(path, limits);
}

std::unique_ptr<ImageWriter> png_create(const std::string& path, int width, int height, Format format,
                                        const Metadata& metadata, const WriteOptions& options) {
  return std::make_unique<PngWriter>(path, width, height, format, metadata, options);
}

#endif  // TF_HAVE_LIBPNG

}  // namespace

const FormatCodec& png_codec() {
#ifdef TF_HAVE_LIBPNG
  static const FormatCodec codec{"libpng", [] { return true; }, png_sniff, png_extension,
                                 png_open, png_can_write,       png_create};
#else
  static const FormatCodec codec{"libpng", [] { return false; }, png_sniff, png_extension,
                                 nullptr,  png_can_write,        nullptr};
#endif
  return codec;
}

}  // namespace tf::io
