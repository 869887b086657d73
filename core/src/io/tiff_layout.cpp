#include "tiff_layout.hpp"

#ifdef TF_HAVE_LIBTIFF
#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

namespace tf::io::tiff {

namespace {

std::string compression_name(int c) {
  switch (c) {
    case COMPRESSION_NONE: return "none";
    case COMPRESSION_LZW: return "lzw";
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE: return "deflate";
    case COMPRESSION_ZSTD: return "zstd";
    case COMPRESSION_PACKBITS: return "packbits";
    case COMPRESSION_JPEG: return "jpeg";
    case COMPRESSION_OJPEG: return "old-jpeg";
    case COMPRESSION_CCITTRLE:
    case COMPRESSION_CCITTRLEW:
    case COMPRESSION_CCITTFAX3:
    case COMPRESSION_CCITTFAX4: return "ccitt";
    case COMPRESSION_LZMA: return "lzma";
    case COMPRESSION_SGILOG:
    case COMPRESSION_SGILOG24: return "sgilog";
    case COMPRESSION_WEBP: return "webp";
    case COMPRESSION_LERC: return "lerc";
    case COMPRESSION_JXL: return "jxl";
    default: return fmt::format("compression {}", c);
  }
}

// How many raw bytes one compressed byte may plausibly stand for (a bound, generous on purpose:
// Deflate tops out near 1032:1, LZW near 1400:1, PackBits 64:1, ZSTD's RLE blocks 32768:1).
std::uint64_t max_ratio(int c) {
  switch (c) {
    case COMPRESSION_NONE: return 1;
    case COMPRESSION_PACKBITS: return 130;
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE: return 1100;
    case COMPRESSION_LZW: return 2000;
    default: return 1 << 16;
  }
}

}  // namespace

void TiffLayout::read_layout(TIFF* t, const Limits& limits, TiffMessages& msgs, ImageInfo& info) {
  read_size(t, limits);
  const Tags tags = read_tags(t, info);
  read_sample_type(tags);
  if (tags.comp == COMPRESSION_JPEG) info.jpeg = jpeg_coding(t, tags.photo);
  const int colors = read_colour_model(t, tags);
  const bool alpha = !palette_ && tags.spp > colors;  // the first extra sample, declared or not
  const int out_channels = palette_ ? 3 : colors == 1 ? (alpha ? 4 : 1) : (alpha ? 4 : 3);
  info.stored_channels = palette_ ? 3 : colors + (alpha ? 1 : 0);
  info.format = Format{type_, out_channels};
  info.width = W_;
  info.height = H_;
  info.codec = "libtiff";
  info.access = RowAccess::Random;
  const std::uint64_t units = plan_units(t, tags);
  check_data_held(t, units, tags.comp, msgs);
  map_samples_to_channels(colors, alpha, out_channels);
}

void TiffLayout::read_size(TIFF* t, const Limits& limits) {
  std::uint32_t w = 0, hh = 0;
  if (!TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(t, TIFFTAG_IMAGELENGTH, &hh) || w == 0 || hh == 0)
    fail(ErrorKind::Decode, path_, "no image size in the TIFF directory");
  if (w > INT_MAX || hh > INT_MAX)
    fail(ErrorKind::Limit, path_, fmt::format("{}x{} pixels: a side over {} pixels is not supported", w, hh, INT_MAX));
  const long long pixels = static_cast<long long>(w) * hh;
  if (pixels > limits.max_stream_pixels)
    fail(ErrorKind::Limit, path_,
         fmt::format("{}x{} pixels is more than the limit of {} pixels for streamed images", w, hh,
                     limits.max_stream_pixels));
  W_ = static_cast<int>(w);
  H_ = static_cast<int>(hh);
}

TiffLayout::Tags TiffLayout::read_tags(TIFF* t, ImageInfo& info) {
  Tags g;
  TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &g.comp);
  if (g.comp == COMPRESSION_SGILOG || g.comp == COMPRESSION_SGILOG24) {
    sgilog_ = true;  // libtiff decodes it to 32-bit float samples; its tags then say so
    TIFFSetField(t, TIFFTAG_SGILOGDATAFMT, SGILOGDATAFMT_FLOAT);
  }
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &g.bps);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &g.spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &g.sfmt);
  TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &g.planar);
  if (!TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &g.photo)) g.photo = g.spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
  info.compression = compression_name(g.comp);
  if (!TIFFIsCODECConfigured(g.comp))
    fail(ErrorKind::Decode, path_, fmt::format("{} compression is not in this build of libtiff", info.compression));
  return g;
}

void TiffLayout::read_sample_type(const Tags& g) {
  if (g.comp == COMPRESSION_OJPEG)
    fail(ErrorKind::Decode, path_, "old-style JPEG compression (TIFF 6.0, compression 6) is not supported");
  if ((g.comp == COMPRESSION_JPEG || g.comp == COMPRESSION_OJPEG) && g.bps != 8)
    fail(ErrorKind::Decode, path_, fmt::format("{}-bit JPEG compression is not supported (8-bit only)", g.bps));
  if (g.sfmt == SAMPLEFORMAT_INT) fail(ErrorKind::Decode, path_, "signed integer samples are not supported");
  if (g.sfmt == SAMPLEFORMAT_IEEEFP) {
    if (g.bps != 32)
      fail(ErrorKind::Decode, path_, fmt::format("{}-bit floating-point samples are not supported", g.bps));
    type_ = PixelType::F32;
  } else if (g.sfmt == SAMPLEFORMAT_UINT || g.sfmt == SAMPLEFORMAT_VOID) {
    if (g.bps == 8 || g.bps == 1 || g.bps == 2 || g.bps == 4) type_ = PixelType::U8;
    else if (g.bps == 16) type_ = PixelType::U16;
    else fail(ErrorKind::Decode, path_, fmt::format("{}-bit integer samples are not supported", g.bps));
  } else {
    fail(ErrorKind::Decode, path_, fmt::format("sample format {} (complex) is not supported", g.sfmt));
  }
  bps_ = g.bps;
  spp_ = g.spp;
  if (g.spp < 1) fail(ErrorKind::Decode, path_, "no samples per pixel");
}

int TiffLayout::read_colour_model(TIFF* t, const Tags& g) {
  int colors = 0;
  switch (g.photo) {
    case PHOTOMETRIC_MINISWHITE: invert_ = true; [[fallthrough]];
    case PHOTOMETRIC_MINISBLACK: colors = 1; break;
    case PHOTOMETRIC_RGB: colors = 3; break;
    case PHOTOMETRIC_PALETTE: colors = 1, palette_ = true; break;
    case PHOTOMETRIC_YCBCR:
      if (g.comp != COMPRESSION_JPEG)
        fail(ErrorKind::Decode, path_, "YCbCr samples without JPEG compression are not supported");
      TIFFSetField(t, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);  // libjpeg converts to RGB
      jpeg_rgb_ = true;
      colors = 3;
      break;
    case PHOTOMETRIC_LOGL:
    case PHOTOMETRIC_LOGLUV:
      if (!sgilog_) fail(ErrorKind::Decode, path_, "LogLuv/LogL samples without SGILog compression are not supported");
      colors = g.photo == PHOTOMETRIC_LOGLUV ? 3 : 1;
      xyz_ = g.photo == PHOTOMETRIC_LOGLUV;
      break;
    case PHOTOMETRIC_SEPARATED: fail(ErrorKind::Decode, path_, "CMYK (separated) TIFF is not supported");
    case PHOTOMETRIC_CIELAB:
    case PHOTOMETRIC_ICCLAB:
    case PHOTOMETRIC_ITULAB: fail(ErrorKind::Decode, path_, "CIE L*a*b* TIFF is not supported");
    default: fail(ErrorKind::Decode, path_, fmt::format("photometric interpretation {} is not supported", g.photo));
  }
  if (g.spp < colors)
    fail(ErrorKind::Decode, path_, fmt::format("{} samples per pixel for a {}-colour image", g.spp, colors));
  if (g.bps < 8 && colors != 1)
    fail(ErrorKind::Decode, path_, fmt::format("{}-bit RGB samples are not supported", g.bps));
  if (palette_) read_palette(t, g.spp, g.bps);
  return colors;
}

void TiffLayout::read_palette(TIFF* t, int spp, int bps) {
  if (spp != 1) fail(ErrorKind::Decode, path_, "palette images with extra samples are not supported");
  if (bps > 8) fail(ErrorKind::Decode, path_, fmt::format("{}-bit palette indices are not supported", bps));
  std::uint16_t *r = nullptr, *g = nullptr, *b = nullptr;
  if (!TIFFGetField(t, TIFFTAG_COLORMAP, &r, &g, &b) || !r || !g || !b)
    fail(ErrorKind::Decode, path_, "palette image without a colormap");
  const int n = 1 << bps;
  bool eight_bit = true;
  for (int i = 0; i < n; ++i) eight_bit = eight_bit && r[i] < 256 && g[i] < 256 && b[i] < 256;
  auto scale = [&](std::uint16_t v) {
    return static_cast<std::uint8_t>(eight_bit ? v : (static_cast<std::uint32_t>(v) * 255 + 32767) / 65535);
  };
  pal_.assign(256 * 3, 0);
  for (int i = 0; i < n; ++i) pal_[3 * i] = scale(r[i]), pal_[3 * i + 1] = scale(g[i]), pal_[3 * i + 2] = scale(b[i]);
}

std::uint64_t TiffLayout::plan_units(TIFF* t, const Tags& g) {
  separate_ = g.planar == PLANARCONFIG_SEPARATE && g.spp > 1;
  if (separate_ && xyz_) fail(ErrorKind::Decode, path_, "LogLuv in separate planes is not supported");
  tiled_ = TIFFIsTiled(t);
  if (tiled_) {
    std::uint32_t tw = 0, th = 0;
    TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
    if (tw == 0 || th == 0 || tw > INT_MAX || th > INT_MAX) fail(ErrorKind::Decode, path_, "invalid tile size");
    uw_ = static_cast<int>(tw);
    uh_ = static_cast<int>(th);
    row_stride_ = TIFFTileRowSize64(t);
  } else {
    std::uint32_t rps = 0;
    TIFFGetFieldDefaulted(t, TIFFTAG_ROWSPERSTRIP, &rps);
    uw_ = W_;
    uh_ = static_cast<int>(std::min<std::uint32_t>(std::max<std::uint32_t>(rps, 1), static_cast<std::uint32_t>(H_)));
    row_stride_ = TIFFScanlineSize64(t);
  }
  across_ = static_cast<int>((static_cast<long long>(W_) + uw_ - 1) / uw_);
  chunk_rows_ = static_cast<int>((static_cast<long long>(H_) + uh_ - 1) / uh_);
  planes_ = separate_ ? g.spp : 1;
  unit_samples_ = separate_ ? 1 : g.spp;
  const std::uint64_t expect_stride = (static_cast<std::uint64_t>(uw_) * unit_samples_ * g.bps + 7) / 8;
  if (row_stride_ != expect_stride)
    fail(ErrorKind::Decode, path_, "unsupported sample layout (subsampled or padded rows)");
  const std::uint64_t units = tiled_ ? TIFFNumberOfTiles(t) : TIFFNumberOfStrips(t);
  if (units != static_cast<std::uint64_t>(across_) * chunk_rows_ * planes_)
    fail(ErrorKind::Decode, path_,
         fmt::format("{} {} where {} were expected", units, tiled_ ? "tiles" : "strips",
                     static_cast<std::uint64_t>(across_) * chunk_rows_ * planes_));
  if (row_stride_ * uh_ > (std::uint64_t{1} << 40)) fail(ErrorKind::Limit, path_, "strips or tiles too large");
  return units;
}

void TiffLayout::check_data_held(TIFF* t, std::uint64_t units, int comp, TiffMessages& msgs) {
  std::error_code ec;
  const std::uint64_t file_size = std::filesystem::file_size(path_, ec);
  std::uint64_t held = 0;
  for (std::uint64_t u = 0; u < units; ++u) {
    int err = 0;
    const std::uint64_t off = TIFFGetStrileOffsetWithErr(t, static_cast<std::uint32_t>(u), &err);
    const std::uint64_t bc = err ? 0 : TIFFGetStrileByteCountWithErr(t, static_cast<std::uint32_t>(u), &err);
    if (err || off >= file_size) continue;
    held += std::min(bc, file_size - off);
  }
  msgs.clear();
  const std::uint64_t raw = tiled_ ? row_stride_ * uh_ * units : row_stride_ * static_cast<std::uint64_t>(H_) * planes_;
  const std::uint64_t ratio = jpeg_rgb_ ? (1 << 16) : max_ratio(comp);
  if (held == 0 || (held < raw && (raw - 1) / ratio + 1 > held))
    fail(ErrorKind::Decode, path_,
         fmt::format("claims {}x{} pixels but holds only {} bytes of image data", W_, H_, held));
}

void TiffLayout::map_samples_to_channels(int colors, bool alpha, int out_channels) {
  targets_.resize(planes_);
  auto add = [&](int s, int ch, bool inv) {
    if (separate_) targets_[s].push_back({0, ch, inv});
    else targets_[0].push_back({s, ch, inv});
  };
  if (!palette_) {
    if (colors == 1) {
      if (alpha) {
        for (int c = 0; c < 3; ++c) add(0, c, invert_);
      } else {
        add(0, 0, invert_);
      }
    } else {
      for (int c = 0; c < 3; ++c) add(c, c, false);
    }
    if (alpha) add(colors, 3, false);
  }
  identity_ = !separate_ && !palette_ && !invert_ && bps_ >= 8 && spp_ == out_channels && !(colors == 1 && alpha);
}

}  // namespace tf::io::tiff
#endif
