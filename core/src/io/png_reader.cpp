// The libpng reader, rows streamed in order (format_png.cpp registers it; png_common.hpp holds what
// it shares with the writer).
//
// Reading: 8- and 16-bit; gray stays one channel; gray+alpha is delivered as RGBA (stored_channels
// 2); palette becomes RGB, or RGBA when it has a tRNS chunk; tRNS on gray or RGB becomes an alpha
// channel as well (gray+tRNS: RGBA, stored_channels 2; as stb does); bit depths below 8 are
// expanded to 8; 16-bit samples come in host order. Non-interlaced files stream (png_read_row);
// Adam7-interlaced ones cannot, and are decoded whole when opened, against limits.max_pixels.
// Metadata: eXIf, iCCP and the XMP iTXt/tEXt chunk found before the image data (chunks after IDAT
// are not seen by a streaming reader).
#include "png_reader.hpp"

#ifdef TF_HAVE_LIBPNG
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <png.h>

#include "codec_checks.hpp"
#include "metadata.hpp"
#include "png_common.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::io::png {
namespace {

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
    codec_checks::check_rows_request(path_, info_, y, rows);
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

}  // namespace

std::unique_ptr<ImageReader> png_open(const std::string& path, const Limits& limits) {
  return std::make_unique<PngReader>(path, limits);
}

}  // namespace tf::io::png
#endif
