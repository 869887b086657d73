// The libtiff reader: any band of rows, strips and tiles decoded on every core (format_tiff.cpp
// registers it; tiff_common.hpp holds what it shares with the writer).
//
// Reader. One TIFF* handle per worker thread, all on the same file: libtiff handles are not shared
// between threads, but any number may read one file. read_rows() lists every strip/tile that
// overlaps the band ("units"), decodes them in parallel (each worker on its own handle, into its own
// buffer) and each worker converts the rows it decoded straight into the caller's band. The units of
// the last strip row / tile row of a band that ends inside it are kept (a one-row cache), so bands
// that do not line up with strips never decode a strip twice.
// Delivered: u8 / u16 / f32 with 1, 3 or 4 channels. Gray+alpha becomes RGBA (stored_channels 2);
// 1/2/4-bit gray and bilevel are expanded to u8 (0..255), palette images (1..8-bit indices) to RGB
// u8 through the colormap (16-bit entries scaled; a colormap of 8-bit values, a common writer bug,
// is used as it is); min-is-white is inverted. Associated (premultiplied) alpha is delivered as stored.
// SGILog (LogLuv, LogL: OpenCV's float TIFFs) is decoded to float by libtiff (SGILOGDATAFMT_FLOAT) and
// delivered as f32: LogL as gray, LogLuv's CIE XYZ turned into linear RGB (sRGB primaries, D65 white,
// the matrix OpenCV's XYZ conversions use), so that what OpenCV wrote from RGB comes back as that RGB.
// Refused with a message: signed integer, 32-bit integer, 16/64-bit float and complex samples, other
// bit depths (12-bit JPEG included), CMYK/Lab/YCbCr without JPEG compression, old-style JPEG, palettes
// with extra samples.
// Reduced levels (ImageInfo::levels): the first page's SubIFDs and the reduced-resolution pages
// right after it, each opened and checked at open as the image is, kept when they have its format
// and shrink; open_level() makes a reader on one (every worker handle moved to its directory).
#include "tiff_reader.hpp"

#ifdef TF_HAVE_LIBTIFF
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <tiffio.h>

#include "metadata.hpp"
#include "tiff_common.hpp"
#include "tilefilter/util/error.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf::io::tiff {
namespace {

// ---------------------------------------------------------------------------------------------
// Small helpers.

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

template <class T> T inverted(T v) {
  if constexpr (std::is_same_v<T, float>) return 1.0f - v;
  else return static_cast<T>(std::numeric_limits<T>::max() - v);
}

// ---------------------------------------------------------------------------------------------
// Reader

struct Handle {
  TIFF* tif = nullptr;
  std::unique_ptr<TiffMessages> msgs = std::make_unique<TiffMessages>();
  std::vector<std::uint8_t> scratch;   // one decoded unit
  std::vector<std::uint8_t> unpacked;  // one row of <8-bit samples as bytes
  Handle() = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (tif) TIFFClose(tif);
  }
};

// Where a reduced level lies: a SubIFD of the first page (by its offset) or a further page.
struct Place {
  std::uint64_t subifd = 0;  // 0: not a SubIFD
  int page = 0;              // directory index in the main chain; 0 with subifd 0: the image itself
  bool full() const { return subifd == 0 && page == 0; }
};

constexpr int kMaxLevels = 32;  // candidates looked at; a pyramid halving a 2^31 side has fewer

// Moves a handle to the directory of `p` (a fresh handle is on the first page already).
bool go_to(TIFF* t, const Place& p) {
  if (p.subifd) return TIFFSetSubDirectory(t, p.subifd) != 0;
  return p.page == 0 || TIFFSetDirectory(t, static_cast<tdir_t>(p.page)) != 0;
}

// Where one stored sample goes in the delivered pixel.
struct Target {
  int sample;   // within the unit's samples (0 for a separate plane)
  int channel;  // in the delivered pixel
  bool invert;
};

class TiffReader final : public ImageReader {
 public:
  // The image (place = {}) or one of its reduced levels.
  TiffReader(const std::string& path, const Limits& limits, Place place = {})
      : path_(path), limits_(limits), place_(place) {
    const int threads = default_threads();
    for (int i = 0; i < threads; ++i) handles_.push_back(std::make_unique<Handle>());
    Handle& h = *handles_[0];
    h.tif = open_tiff(path_, "rm", h.msgs.get());
    if (!h.tif) fail(ErrorKind::Decode, path_, reason(*h.msgs, path_, "not a TIFF file libtiff can read"));
    TIFF* t = h.tif;
    if (!go_to(t, place_)) fail(ErrorKind::Decode, path_, reason(*h.msgs, path_, "reduced level cannot be read"));

    // Pages: counted by walking the directory chain (no directory is parsed).
    const int pages = place_.full() ? TIFFNumberOfDirectories(t) : 1;
    h.msgs->clear();
    if (pages > 1) info_.note = fmt::format("first page of {} read", pages);

    std::uint32_t w = 0, hh = 0;
    if (!TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(t, TIFFTAG_IMAGELENGTH, &hh) || w == 0 || hh == 0)
      fail(ErrorKind::Decode, path_, "no image size in the TIFF directory");
    if (w > INT_MAX || hh > INT_MAX)
      fail(ErrorKind::Limit, path_,
           fmt::format("{}x{} pixels: a side over {} pixels is not supported", w, hh, INT_MAX));
    const long long pixels = static_cast<long long>(w) * hh;
    if (pixels > limits.max_stream_pixels)
      fail(ErrorKind::Limit, path_,
           fmt::format("{}x{} pixels is more than the limit of {} pixels for streamed images", w, hh,
                       limits.max_stream_pixels));
    W_ = static_cast<int>(w);
    H_ = static_cast<int>(hh);

    std::uint16_t bps = 1, spp = 1, sfmt = SAMPLEFORMAT_UINT, photo = PHOTOMETRIC_MINISBLACK,
                  planar = PLANARCONFIG_CONTIG, comp = COMPRESSION_NONE;
    TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &comp);
    if (comp == COMPRESSION_SGILOG || comp == COMPRESSION_SGILOG24) {
      sgilog_ = true;  // libtiff decodes it to 32-bit float samples; its tags then say so
      TIFFSetField(t, TIFFTAG_SGILOGDATAFMT, SGILOGDATAFMT_FLOAT);
    }
    TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &sfmt);
    TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
    if (!TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &photo)) photo = spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
    info_.compression = compression_name(comp);
    if (!TIFFIsCODECConfigured(comp))
      fail(ErrorKind::Decode, path_, fmt::format("{} compression is not in this build of libtiff", info_.compression));

    // Sample type.
    if (comp == COMPRESSION_OJPEG)
      fail(ErrorKind::Decode, path_, "old-style JPEG compression (TIFF 6.0, compression 6) is not supported");
    if ((comp == COMPRESSION_JPEG || comp == COMPRESSION_OJPEG) && bps != 8)
      fail(ErrorKind::Decode, path_, fmt::format("{}-bit JPEG compression is not supported (8-bit only)", bps));
    if (sfmt == SAMPLEFORMAT_INT) fail(ErrorKind::Decode, path_, "signed integer samples are not supported");
    if (sfmt == SAMPLEFORMAT_IEEEFP) {
      if (bps != 32)
        fail(ErrorKind::Decode, path_, fmt::format("{}-bit floating-point samples are not supported", bps));
      type_ = PixelType::F32;
    } else if (sfmt == SAMPLEFORMAT_UINT || sfmt == SAMPLEFORMAT_VOID) {
      if (bps == 8 || bps == 1 || bps == 2 || bps == 4) type_ = PixelType::U8;
      else if (bps == 16) type_ = PixelType::U16;
      else fail(ErrorKind::Decode, path_, fmt::format("{}-bit integer samples are not supported", bps));
    } else {
      fail(ErrorKind::Decode, path_, fmt::format("sample format {} (complex) is not supported", sfmt));
    }
    bps_ = bps;
    spp_ = spp;
    if (spp < 1) fail(ErrorKind::Decode, path_, "no samples per pixel");

    if (comp == COMPRESSION_JPEG) info_.jpeg = jpeg_coding(t, photo);

    // Colour model.
    int colors = 0;
    switch (photo) {
      case PHOTOMETRIC_MINISWHITE: invert_ = true; [[fallthrough]];
      case PHOTOMETRIC_MINISBLACK: colors = 1; break;
      case PHOTOMETRIC_RGB: colors = 3; break;
      case PHOTOMETRIC_PALETTE: colors = 1, palette_ = true; break;
      case PHOTOMETRIC_YCBCR:
        if (comp != COMPRESSION_JPEG)
          fail(ErrorKind::Decode, path_, "YCbCr samples without JPEG compression are not supported");
        TIFFSetField(t, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);  // libjpeg converts to RGB
        jpeg_rgb_ = true;
        colors = 3;
        break;
      case PHOTOMETRIC_LOGL:
      case PHOTOMETRIC_LOGLUV:
        if (!sgilog_)
          fail(ErrorKind::Decode, path_, "LogLuv/LogL samples without SGILog compression are not supported");
        colors = photo == PHOTOMETRIC_LOGLUV ? 3 : 1;
        xyz_ = photo == PHOTOMETRIC_LOGLUV;
        break;
      case PHOTOMETRIC_SEPARATED: fail(ErrorKind::Decode, path_, "CMYK (separated) TIFF is not supported");
      case PHOTOMETRIC_CIELAB:
      case PHOTOMETRIC_ICCLAB:
      case PHOTOMETRIC_ITULAB: fail(ErrorKind::Decode, path_, "CIE L*a*b* TIFF is not supported");
      default: fail(ErrorKind::Decode, path_, fmt::format("photometric interpretation {} is not supported", photo));
    }
    if (spp < colors)
      fail(ErrorKind::Decode, path_, fmt::format("{} samples per pixel for a {}-colour image", spp, colors));
    if (bps < 8 && colors != 1)
      fail(ErrorKind::Decode, path_, fmt::format("{}-bit RGB samples are not supported", bps));
    if (palette_) {
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
      for (int i = 0; i < n; ++i)
        pal_[3 * i] = scale(r[i]), pal_[3 * i + 1] = scale(g[i]), pal_[3 * i + 2] = scale(b[i]);
    }
    const bool alpha = !palette_ && spp > colors;  // the first extra sample, declared or not
    const int out_channels = palette_ ? 3 : colors == 1 ? (alpha ? 4 : 1) : (alpha ? 4 : 3);
    info_.stored_channels = palette_ ? 3 : colors + (alpha ? 1 : 0);
    info_.format = Format{type_, out_channels};
    info_.width = W_;
    info_.height = H_;
    info_.codec = "libtiff";
    info_.access = RowAccess::Random;

    // Layout: units (strips or tiles), rows of units ("chunk rows"), planes.
    separate_ = planar == PLANARCONFIG_SEPARATE && spp > 1;
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
      uh_ = static_cast<int>(std::min<std::uint32_t>(std::max<std::uint32_t>(rps, 1), hh));
      row_stride_ = TIFFScanlineSize64(t);
    }
    across_ = static_cast<int>((static_cast<long long>(W_) + uw_ - 1) / uw_);
    chunk_rows_ = static_cast<int>((static_cast<long long>(H_) + uh_ - 1) / uh_);
    planes_ = separate_ ? spp : 1;
    unit_samples_ = separate_ ? 1 : spp;
    const std::uint64_t expect_stride = (static_cast<std::uint64_t>(uw_) * unit_samples_ * bps + 7) / 8;
    if (row_stride_ != expect_stride)
      fail(ErrorKind::Decode, path_, "unsupported sample layout (subsampled or padded rows)");
    const std::uint64_t units = tiled_ ? TIFFNumberOfTiles(t) : TIFFNumberOfStrips(t);
    if (units != static_cast<std::uint64_t>(across_) * chunk_rows_ * planes_)
      fail(ErrorKind::Decode, path_,
           fmt::format("{} {} where {} were expected", units, tiled_ ? "tiles" : "strips",
                       static_cast<std::uint64_t>(across_) * chunk_rows_ * planes_));
    if (row_stride_ * uh_ > (std::uint64_t{1} << 40)) fail(ErrorKind::Limit, path_, "strips or tiles too large");

    // Data that can plausibly hold the pixels it claims, before anything is allocated: the strip/tile
    // bytes that lie inside the file, times the most the compression can expand.
    {
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
      h.msgs->clear();
      const std::uint64_t raw =
          tiled_ ? row_stride_ * uh_ * units : row_stride_ * static_cast<std::uint64_t>(H_) * planes_;
      const std::uint64_t ratio = jpeg_rgb_ ? (1 << 16) : max_ratio(comp);
      if (held == 0 || (held < raw && (raw - 1) / ratio + 1 > held))
        fail(ErrorKind::Decode, path_,
             fmt::format("claims {}x{} pixels but holds only {} bytes of image data", W_, H_, held));
    }

    // Which stored sample goes where.
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
    identity_ = !separate_ && !palette_ && !invert_ && bps >= 8 && spp == out_channels && !(colors == 1 && alpha);

    read_metadata(t);
    if (place_.full()) find_levels(pages);
    if (xyz_)
      info_.note +=
          std::string(info_.note.empty() ? "" : "; ") + "SGILog CIE XYZ read as linear RGB (sRGB primaries, D65)";
  }

  std::unique_ptr<ImageReader> open_level(int index) const override {
    if (index < 0 || index >= static_cast<int>(levels_.size()))
      fail(ErrorKind::InvalidArgument, path_, fmt::format("no reduced level {} ({} levels)", index, levels_.size()));
    return std::make_unique<TiffReader>(path_, limits_, levels_[static_cast<std::size_t>(index)]);
  }

  void read_rows(int y, const ImageView& rows) override {
    if (rows.height <= 0) return;
    if (y < 0 || y + rows.height > H_ || rows.width != W_ || rows.format != info_.format)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("{}: rows {}..{} of a {}x{} {} image asked as {}x{} {}", path_, y, y + rows.height, W_,
                              H_, to_string(info_.format), rows.width, rows.height, to_string(rows.format)));
    const int end = y + rows.height;
    const int cr0 = y / uh_, cr1 = (end - 1) / uh_;
    const int keep = (end % uh_ != 0 && end < H_) ? cr1 : -1;  // the band ends inside this chunk row

    struct Job {
      int cr, plane, tx;
    };
    std::vector<Job> jobs;
    for (int cr = cr0; cr <= cr1; ++cr) {
      if (cr == cache_cr_) continue;
      for (int p = 0; p < planes_; ++p) {
        if (!palette_ && targets_[p].empty()) continue;  // an extra sample nobody reads
        for (int tx = 0; tx < across_; ++tx) jobs.push_back({cr, p, tx});
      }
    }
    const bool refill = keep >= 0 && keep != cache_cr_;
    std::vector<std::vector<std::uint8_t>> kept(refill ? static_cast<std::size_t>(planes_) * across_ : 0);

    // From the cache first (on this thread: it is a copy).
    if (cache_cr_ >= cr0 && cache_cr_ <= cr1) {
      for (int p = 0; p < planes_; ++p)
        for (int tx = 0; tx < across_; ++tx) {
          const auto& buf = cache_[static_cast<std::size_t>(p) * across_ + tx];
          if (!buf.empty()) convert_unit(buf.data(), cache_cr_, p, tx, y, rows, *handles_[0]);
        }
    }

    pool().run(static_cast<int>(jobs.size()), [&](int i, int worker) {
      const Job& j = jobs[i];
      Handle& h = handle(worker);
      const std::size_t slot = static_cast<std::size_t>(j.plane) * across_ + j.tx;
      std::vector<std::uint8_t>& buf = (j.cr == keep && refill) ? kept[slot] : h.scratch;
      decode_unit(h, j.cr, j.plane, j.tx, buf);
      convert_unit(buf.data(), j.cr, j.plane, j.tx, y, rows, h);
    });

    if (refill) {
      cache_ = std::move(kept);
      cache_cr_ = keep;
    }
  }

 private:
  void read_metadata(TIFF* t) {
    Metadata& md = info_.metadata;
    std::uint32_t n = 0;
    void* data = nullptr;
    if (TIFFGetField(t, TIFFTAG_ICCPROFILE, &n, &data) && n && data) {
      const auto* p = static_cast<const unsigned char*>(data);
      md.icc.assign(p, p + n);
    }
    n = 0, data = nullptr;
    if (TIFFGetField(t, TIFFTAG_XMLPACKET, &n, &data) && n && data) {
      md.xmp.assign(static_cast<const char*>(data), n);
      while (!md.xmp.empty() && md.xmp.back() == '\0') md.xmp.pop_back();
    }
    std::uint16_t o = 1;
    if (TIFFGetField(t, TIFFTAG_ORIENTATION, &o) && o >= 1 && o <= 8) md.orientation = o;
    Ifd0Text text;
    for (const auto& [tag, field] : kIfd0TextTags) {
      char* v = nullptr;
      if (TIFFGetField(t, tag, &v) && v) text.*field = v;
    }
    if (!text.empty()) md.exif = exif_from_ifd0_text(text, md.orientation);
  }

  // Reduced levels: the first page's SubIFDs (vips --subifd, OME-TIFF), then the pages right after
  // it marked reduced-resolution (NEWSUBFILETYPE bit 0: vips --pyramid, GDAL overviews). Each is
  // opened as a reader would (sizes, layout, strip/tile offsets and byte counts checked) and kept
  // when it has this image's pixel format and is smaller than the level before it; anything else
  // is ignored. The "first page of N" note counts the pages that are not reduced-resolution ones.
  void find_levels(int pages) {
    TiffMessages msgs;
    const std::unique_ptr<TIFF, TiffClose> t(open_tiff(path_, "rm", &msgs));
    if (!t) return;
    std::vector<Place> candidates;
    int level_pages = 0;  // reduced-resolution pages, used or not: copies of the image, not pages
    std::uint16_t n = 0;
    toff_t* offsets = nullptr;
    if (TIFFGetField(t.get(), TIFFTAG_SUBIFD, &n, &offsets) && offsets)
      for (int i = 0; i < std::min<int>(n, kMaxLevels); ++i)
        if (offsets[i] != 0) candidates.push_back({offsets[i], 0});
    for (int page = 1; page <= kMaxLevels && TIFFReadDirectory(t.get()); ++page) {
      std::uint32_t type = 0;
      if (!TIFFGetField(t.get(), TIFFTAG_SUBFILETYPE, &type) || !(type & FILETYPE_REDUCEDIMAGE)) break;
      candidates.push_back({0, page});
      ++level_pages;
    }
    LevelSize last{W_, H_};
    for (const Place& p : candidates) {
      try {
        const TiffReader level(path_, limits_, p);
        const ImageInfo& li = level.info();
        if (li.format != info_.format || li.width > last.width || li.height > last.height ||
            (li.width == last.width && li.height == last.height))
          continue;
        last = {li.width, li.height};
        info_.levels.push_back(last);
        levels_.push_back(p);
      } catch (const Error&) {
        // A level libtiff cannot read, or one that lies about its data: the image does without it.
      }
    }
    info_.note = pages - level_pages > 1 ? fmt::format("first page of {} read", pages - level_pages) : "";
  }

  ThreadPool& pool() {
    if (!pool_) pool_ = std::make_unique<ThreadPool>(static_cast<int>(handles_.size()) - 1);
    return *pool_;
  }

  // The handle of a worker, opened on its first job (each thread reads through its own).
  Handle& handle(int worker) {
    Handle& h = *handles_[worker];
    if (!h.tif) {
      h.tif = open_tiff(path_, "rm", h.msgs.get());
      if (!h.tif) fail(ErrorKind::Decode, path_, reason(*h.msgs, path_, "cannot be opened again"));
      if (!go_to(h.tif, place_)) fail(ErrorKind::Decode, path_, reason(*h.msgs, path_, "reduced level lost"));
      if (jpeg_rgb_) TIFFSetField(h.tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
      if (sgilog_) TIFFSetField(h.tif, TIFFTAG_SGILOGDATAFMT, SGILOGDATAFMT_FLOAT);
    }
    return h;
  }

  int unit_rows(int cr) const { return tiled_ ? uh_ : std::min(uh_, H_ - cr * uh_); }

  void decode_unit(Handle& h, int cr, int plane, int tx, std::vector<std::uint8_t>& buf) {
    const std::uint32_t unit =
        static_cast<std::uint32_t>((static_cast<std::uint64_t>(plane) * chunk_rows_ + cr) * across_ + tx);
    const std::uint64_t bytes = row_stride_ * static_cast<std::uint64_t>(unit_rows(cr));
    if (buf.size() < bytes) buf.resize(bytes);
    h.msgs->clear();
    const tmsize_t got = tiled_ ? TIFFReadEncodedTile(h.tif, unit, buf.data(), static_cast<tmsize_t>(bytes))
                                : TIFFReadEncodedStrip(h.tif, unit, buf.data(), static_cast<tmsize_t>(bytes));
    if (got < 0 || static_cast<std::uint64_t>(got) < bytes) {
      const std::string why = reason(*h.msgs, path_, "short read");
      fail(ErrorKind::Decode, path_,
           fmt::format("{} {} is truncated or corrupt ({})", tiled_ ? "tile" : "strip", unit, why));
    }
  }

  // Copies the rows of one decoded unit that lie in the band [y, y + rows.height) into `rows`.
  void convert_unit(const std::uint8_t* unit, int cr, int plane, int tx, int y, const ImageView& rows, Handle& h) {
    const int top = cr * uh_;
    const int r0 = std::max(y, top), r1 = std::min({y + rows.height, top + unit_rows(cr), H_});
    const int x0 = tx * uw_;
    const int n = std::min(uw_, W_ - x0);
    const std::size_t px = info_.format.pixel_bytes();
    for (int r = r0; r < r1; ++r)
      convert_row(unit + static_cast<std::uint64_t>(r - top) * row_stride_, n, rows.row(r - y) + x0 * px, plane, h);
  }

  void convert_row(const std::uint8_t* src, int n, std::byte* dst, int plane, Handle& h) const {
    const int ns = unit_samples_;
    if (bps_ < 8) {  // unpack to one byte per sample (indices stay indices, gray levels scaled to 0..255)
      const std::size_t count = static_cast<std::size_t>(n) * ns;
      if (h.unpacked.size() < count) h.unpacked.resize(count);
      const int mask = (1 << bps_) - 1, scale = palette_ ? 1 : 255 / mask;
      for (std::size_t k = 0; k < count; ++k) {
        const std::size_t bit = k * bps_;
        h.unpacked[k] = static_cast<std::uint8_t>(((src[bit >> 3] >> (8 - bps_ - (bit & 7))) & mask) * scale);
      }
      src = h.unpacked.data();
    }
    if (palette_) {
      auto* d = reinterpret_cast<std::uint8_t*>(dst);
      for (int i = 0; i < n; ++i) std::memcpy(d + 3 * i, &pal_[3 * src[i]], 3);
      return;
    }
    if (identity_) {
      std::memcpy(dst, src, static_cast<std::size_t>(n) * info_.format.pixel_bytes());
      if (xyz_) xyz_to_rgb(reinterpret_cast<float*>(dst), n);
      return;
    }
    const auto& tg = targets_[plane];
    switch (type_) {
      case PixelType::U8: map_samples(src, n, ns, reinterpret_cast<std::uint8_t*>(dst), tg); break;
      case PixelType::U16:
        map_samples(reinterpret_cast<const std::uint16_t*>(src), n, ns, reinterpret_cast<std::uint16_t*>(dst), tg);
        break;
      case PixelType::F32:
        map_samples(reinterpret_cast<const float*>(src), n, ns, reinterpret_cast<float*>(dst), tg);
        if (xyz_ && !separate_) xyz_to_rgb(reinterpret_cast<float*>(dst), n);
        break;
    }
  }

  // CIE XYZ to linear RGB with sRGB primaries and a D65 white (IEC 61966-2-1; the inverse of the matrix
  // OpenCV's COLOR_BGR2XYZ applies before it writes LogLuv), in place on the first three channels.
  void xyz_to_rgb(float* px, int n) const {
    const int oc = info_.format.channels;
    for (int i = 0; i < n; ++i, px += oc) {
      const float x = px[0], y = px[1], z = px[2];
      px[0] = 3.240479f * x - 1.537150f * y - 0.498535f * z;
      px[1] = -0.969256f * x + 1.875991f * y + 0.041556f * z;
      px[2] = 0.055648f * x - 0.204043f * y + 1.057311f * z;
    }
  }

  template <class T> void map_samples(const T* src, int n, int ns, T* dst, const std::vector<Target>& tg) const {
    const int oc = info_.format.channels;
    for (int i = 0; i < n; ++i, src += ns, dst += oc)
      for (const Target& t : tg) {
        const T v = src[t.sample];
        dst[t.channel] = t.invert ? inverted(v) : v;
      }
  }

  std::string path_;
  Limits limits_;
  Place place_;
  std::vector<Place> levels_;  // where info_.levels lie
  int W_ = 0, H_ = 0;
  PixelType type_ = PixelType::U8;
  int bps_ = 8, spp_ = 1;
  bool invert_ = false, palette_ = false, jpeg_rgb_ = false, separate_ = false, tiled_ = false, identity_ = false;
  bool sgilog_ = false, xyz_ = false;  // SGILog decoded to float; LogLuv's XYZ turned into RGB
  std::vector<std::uint8_t> pal_;      // 256 x RGB
  int uw_ = 0, uh_ = 0, across_ = 1, chunk_rows_ = 1, planes_ = 1, unit_samples_ = 1;
  std::uint64_t row_stride_ = 0;
  std::vector<std::vector<Target>> targets_;      // per plane
  std::vector<std::unique_ptr<Handle>> handles_;  // [0]: the caller's; [k]: worker k's
  int cache_cr_ = -1;                             // the chunk row whose units are kept
  std::vector<std::vector<std::uint8_t>> cache_;
  std::unique_ptr<ThreadPool> pool_;  // last: its threads stop before the handles close
};

}  // namespace

std::unique_ptr<ImageReader> make_reader(const std::string& path, const Limits& limits) {
  return std::make_unique<TiffReader>(path, limits);
}

}  // namespace tf::io::tiff
#endif
