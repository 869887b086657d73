// TIFF on libtiff: a random-access reader (any band of rows, strips and tiles decoded on every core)
// and a streaming writer (strips or tiles compressed on every core, written in order).
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
// Refused with a message: signed integer, 32-bit integer, 16/64-bit float and complex samples, other
// bit depths, CMYK/Lab/YCbCr without JPEG compression, palettes with extra samples.
// Reduced levels (ImageInfo::levels): the first page's SubIFDs and the reduced-resolution pages
// right after it, each opened and checked at open as the image is, kept when they have its format
// and shrink; open_level() makes a reader on one (every worker handle moved to its directory).
//
// Writer. Rows arrive top to bottom in bands of any height and gather into a batch of a few strip
// rows / tile rows (about 2 units per thread). A full batch goes to the workers while the caller
// fills the next one; each worker encodes one strip/tile at a time with libtiff's own codec on a
// private in-memory TIFF (predictor and compression exactly as libtiff writes them — Deflate through
// libdeflate where libtiff has it, LZW, ZSTD), and the caller appends the compressed units to the
// file in order with TIFFWriteRawStrip/Tile. Memory: two batches and their compressed units.
// Metadata: ICC profile, XMP, orientation and the IFD0 text tags of the EXIF block (Make, Model,
// Artist, Copyright, DateTime, Software, ImageDescription). The EXIF sub-IFD (camera settings:
// exposure, lens, GPS) is not carried into TIFF output.
// With tiff_pyramid, reduced-resolution pages follow the image (start_level below).
#include "formats.hpp"

#ifdef TF_HAVE_LIBTIFF
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <tiffio.h>

#include "atomic_file.hpp"
#include "metadata.hpp"
#include "thread_pool.hpp"
#include "tilefilter/error.hpp"
#endif

namespace tf::io {

#ifdef TF_HAVE_LIBTIFF
namespace {

// ---------------------------------------------------------------------------------------------
// libtiff messages: every handle gets its own error/warning handlers (TIFFOpenOptions, libtiff 4.5).
// Errors are kept (the first one since clear()) and become part of one tf::Error; warnings are
// dropped, so nothing reaches stderr.

struct TiffMessages {
  std::string error;
  void clear() { error.clear(); }
};

int on_tiff_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* m = static_cast<TiffMessages*>(user);
  if (m && m->error.empty()) {
    char buf[512];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    m->error = buf;
    if (m->error.empty() && module) m->error = module;
  }
  return 1;
}

int on_tiff_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

TIFF* open_tiff(const std::string& path, const char* mode, TiffMessages* msgs) {
#if TIFFLIB_VERSION >= 20221213
  TIFFOpenOptions* o = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(o, on_tiff_error, msgs);
  TIFFOpenOptionsSetWarningHandlerExtR(o, on_tiff_warning, msgs);
  TIFF* t = TIFFOpenExt(path.c_str(), mode, o);
  TIFFOpenOptionsFree(o);
  return t;
#else
  // Older libtiff: no per-handle handlers; keep stderr quiet, reasons are then generic.
  static std::once_flag once;
  std::call_once(once, [] {
    TIFFSetErrorHandler(nullptr);
    TIFFSetWarningHandler(nullptr);
  });
  (void)msgs;
  return TIFFOpen(path.c_str(), mode);
#endif
}

// "<reason>" from libtiff without a repeated file name in front.
std::string reason(const TiffMessages& m, const std::string& path, const char* fallback) {
  std::string r = m.error.empty() ? std::string(fallback) : m.error;
  if (r.rfind(path + ": ", 0) == 0) r.erase(0, path.size() + 2);
  while (!r.empty() && (r.back() == '.' || r.back() == '\n' || r.back() == ' ')) r.pop_back();
  return r;
}

[[noreturn]] void fail(ErrorKind kind, const std::string& path, const std::string& why) {
  throw Error(kind, fmt::format("{}: {}", path, why));
}

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

struct TiffClose {
  void operator()(TIFF* t) const { TIFFClose(t); }
};

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
    TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &sfmt);
    TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &comp);
    if (!TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &photo)) photo = spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
    info_.compression = compression_name(comp);
    if (!TIFFIsCODECConfigured(comp))
      fail(ErrorKind::Decode, path_, fmt::format("{} compression is not in this build of libtiff", info_.compression));

    // Sample type.
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
      case PHOTOMETRIC_SEPARATED: fail(ErrorKind::Decode, path_, "CMYK (separated) TIFF is not supported");
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
    auto get = [&](ttag_t tag, std::string& s) {
      char* v = nullptr;
      if (TIFFGetField(t, tag, &v) && v) s = v;
    };
    get(TIFFTAG_MAKE, text.make);
    get(TIFFTAG_MODEL, text.model);
    get(TIFFTAG_ARTIST, text.artist);
    get(TIFFTAG_COPYRIGHT, text.copyright);
    get(TIFFTAG_DATETIME, text.date_time);
    get(TIFFTAG_SOFTWARE, text.software);
    get(TIFFTAG_IMAGEDESCRIPTION, text.description);
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
        break;
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
  std::vector<std::uint8_t> pal_;  // 256 x RGB
  int uw_ = 0, uh_ = 0, across_ = 1, chunk_rows_ = 1, planes_ = 1, unit_samples_ = 1;
  std::uint64_t row_stride_ = 0;
  std::vector<std::vector<Target>> targets_;      // per plane
  std::vector<std::unique_ptr<Handle>> handles_;  // [0]: the caller's; [k]: worker k's
  int cache_cr_ = -1;                             // the chunk row whose units are kept
  std::vector<std::vector<std::uint8_t>> cache_;
  std::unique_ptr<ThreadPool> pool_;  // last: its threads stop before the handles close
};

// ---------------------------------------------------------------------------------------------
// Writer

// The settings every strip/tile of one output shares; unit encoders copy them.
struct UnitSetup {
  int unit_width = 0, unit_height = 0;  // a strip is image-wide; a tile is its tile size
  bool tiled = false;
  int spp = 1, bits = 8, sample_format = SAMPLEFORMAT_UINT, compression = COMPRESSION_NONE, predictor = PREDICTOR_NONE,
      level = -1;
};

// libtiff's codec for one worker thread, on a private TIFF in memory: each strip/tile is written
// there as unit 0 with TIFFWriteEncodedStrip/Tile (libtiff applies the predictor and compresses —
// with libdeflate where libtiff was built with it), and the bytes its write procedure receives
// meanwhile are that unit's compressed data, ready for TIFFWriteRawStrip/Tile in the real file.
class UnitEncoder {
 public:
  explicit UnitEncoder(const UnitSetup& s) : tiled_(s.tiled) {
#if TIFFLIB_VERSION >= 20221213
    TIFFOpenOptions* o = TIFFOpenOptionsAlloc();
    TIFFOpenOptionsSetErrorHandlerExtR(o, on_tiff_error, &msgs_);
    TIFFOpenOptionsSetWarningHandlerExtR(o, on_tiff_warning, &msgs_);
    tif_ = TIFFClientOpenExt("memory", "w", this, read_proc, write_proc, seek_proc, close_proc, size_proc, map_proc,
                             unmap_proc, o);
    TIFFOpenOptionsFree(o);
#else
    tif_ = TIFFClientOpen("memory", "w", this, read_proc, write_proc, seek_proc, close_proc, size_proc, map_proc,
                          unmap_proc);
#endif
    if (!tif_) throw Error(ErrorKind::Internal, "libtiff could not make an in-memory TIFF");
    TIFF* t = tif_;
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(s.unit_width));
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(s.unit_height));
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, s.spp);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, s.bits);
    TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, s.sample_format);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, s.spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    if (s.spp == 2 || s.spp == 4) {
      const std::uint16_t extra[1] = {EXTRASAMPLE_UNASSALPHA};
      TIFFSetField(t, TIFFTAG_EXTRASAMPLES, 1, extra);
    }
    TIFFSetField(t, TIFFTAG_COMPRESSION, s.compression);
    if (s.predictor != PREDICTOR_NONE) TIFFSetField(t, TIFFTAG_PREDICTOR, s.predictor);
    if (s.level >= 0 && s.compression == COMPRESSION_ADOBE_DEFLATE)
      TIFFSetField(t, TIFFTAG_ZIPQUALITY, std::min(s.level, 12));
    if (s.level >= 1 && s.compression == COMPRESSION_ZSTD) TIFFSetField(t, TIFFTAG_ZSTD_LEVEL, std::min(s.level, 22));
    if (s.tiled) {
      TIFFSetField(t, TIFFTAG_TILEWIDTH, static_cast<std::uint32_t>(s.unit_width));
      TIFFSetField(t, TIFFTAG_TILELENGTH, static_cast<std::uint32_t>(s.unit_height));
    } else {
      TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, static_cast<std::uint32_t>(s.unit_height));
    }
  }
  ~UnitEncoder() {
    if (tif_) TIFFCleanup(tif_);  // its directory goes nowhere: the write procedure drops it
  }
  UnitEncoder(const UnitEncoder&) = delete;
  UnitEncoder& operator=(const UnitEncoder&) = delete;

  // Compresses `bytes` of unit data (may be modified: the predictor runs in place) into `out`.
  void encode(std::uint8_t* data, std::size_t bytes, std::vector<std::uint8_t>& out, const std::string& path) {
    captured_.clear();
    msgs_.clear();
    capture_ = true;
    const tmsize_t n = tiled_ ? TIFFWriteEncodedTile(tif_, 0, data, static_cast<tmsize_t>(bytes))
                              : TIFFWriteEncodedStrip(tif_, 0, data, static_cast<tmsize_t>(bytes));
    capture_ = false;
    if (n < 0) fail(ErrorKind::Internal, path, reason(msgs_, "memory", "libtiff could not compress a strip"));
    out.swap(captured_);
  }

 private:
  static UnitEncoder* self(thandle_t h) { return static_cast<UnitEncoder*>(h); }
  static tmsize_t read_proc(thandle_t, void*, tmsize_t) { return 0; }
  static tmsize_t write_proc(thandle_t h, void* buf, tmsize_t n) {
    UnitEncoder* e = self(h);
    if (e->capture_) {
      const auto* b = static_cast<const std::uint8_t*>(buf);
      e->captured_.insert(e->captured_.end(), b, b + n);
    }
    e->pos_ += static_cast<toff_t>(n);
    e->size_ = std::max(e->size_, e->pos_);
    return n;
  }
  static toff_t seek_proc(thandle_t h, toff_t off, int whence) {
    UnitEncoder* e = self(h);
    e->pos_ = whence == SEEK_SET ? off : whence == SEEK_CUR ? e->pos_ + off : e->size_ + off;
    return e->pos_;
  }
  static int close_proc(thandle_t) { return 0; }
  static toff_t size_proc(thandle_t h) { return self(h)->size_; }
  static int map_proc(thandle_t, void**, toff_t*) { return 0; }
  static void unmap_proc(thandle_t, void*, toff_t) {}

  TIFF* tif_ = nullptr;
  bool tiled_ = false, capture_ = false;
  toff_t pos_ = 0, size_ = 0;
  std::vector<std::uint8_t> captured_;
  TiffMessages msgs_;
};

class TiffWriter final : public ImageWriter {
 public:
  TiffWriter(const std::string& path, int width, int height, Format format, const Metadata& metadata,
             const WriteOptions& options)
      : path_(path), W_(width), H_(height), in_(format), file_(path) {
    if (width <= 0 || height <= 0)
      fail(ErrorKind::InvalidArgument, path_, fmt::format("cannot write an image of {}x{} pixels", width, height));
    if (format.channels != 1 && format.channels != 3 && format.channels != 4)
      fail(ErrorKind::InvalidArgument, path_,
           fmt::format("TIFF output takes 1, 3 or 4 channels, not {}", format.channels));
    gray_alpha_ = options.gray_alpha && format.channels == 4;
    spp_ = gray_alpha_ ? 2 : format.channels;
    bytes_ = static_cast<int>(bytes_per_sample(format.type));
    row_bytes_ = static_cast<std::size_t>(W_) * spp_ * bytes_;

    // Compression.
    const std::string& c = options.compression;
    int compression = COMPRESSION_NONE;
    if (c.empty() || c == "deflate" || c == "zip") compression = COMPRESSION_ADOBE_DEFLATE;
    else if (c == "none") compression = COMPRESSION_NONE;
    else if (c == "lzw") compression = COMPRESSION_LZW;
    else if (c == "zstd") compression = COMPRESSION_ZSTD;
    else
      fail(ErrorKind::InvalidArgument, path_,
           fmt::format("unknown TIFF compression '{}' (choose none, deflate, lzw{})", c,
                       TIFFIsCODECConfigured(COMPRESSION_ZSTD) ? ", zstd" : ""));
    if (!TIFFIsCODECConfigured(static_cast<std::uint16_t>(compression)))
      fail(ErrorKind::InvalidArgument, path_, fmt::format("this build of libtiff cannot write {} compression", c));
    setup_.compression = compression;
    setup_.level = options.level;
    setup_.spp = spp_;
    setup_.bits = 8 * bytes_;
    setup_.sample_format = format.type == PixelType::F32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT;
    if (compression != COMPRESSION_NONE)
      setup_.predictor = format.type == PixelType::F32 ? PREDICTOR_FLOATINGPOINT : PREDICTOR_HORIZONTAL;

    // Layout.
    tiled_ = options.tiff_tile.width > 0 || options.tiff_tile.height > 0 || options.tiff_pyramid;
    if (tiled_) {
      const TileSize ts = options.tiff_tile.width || options.tiff_tile.height ? options.tiff_tile : TileSize{256, 256};
      if (ts.width <= 0 || ts.height <= 0 || ts.width % 16 || ts.height % 16)
        fail(ErrorKind::InvalidArgument, path_,
             fmt::format("TIFF tiles must be multiples of 16 pixels a side, not {}x{}", ts.width, ts.height));
      uw_ = ts.width;
      uh_ = ts.height;
    } else {
      uw_ = W_;
      const std::size_t target = 512 * 1024;  // bytes a strip, before compression
      uh_ = static_cast<int>(std::clamp<std::size_t>((target + row_bytes_ / 2) / row_bytes_, 1, H_));
    }
    setup_.tiled = tiled_;
    setup_.unit_width = uw_;
    setup_.unit_height = uh_;
    across_ = (W_ + uw_ - 1) / uw_;
    chunk_rows_ = (H_ + uh_ - 1) / uh_;
    unit_row_bytes_ = static_cast<std::size_t>(uw_) * spp_ * bytes_;
    threads_ = options.threads > 0 ? options.threads : default_threads();
    // A batch: enough strip rows / tile rows for two units a thread.
    group_chunks_ = std::min(std::max(1, (2 * threads_ + across_ - 1) / across_), chunk_rows_);

    // The file.
    const double raw = static_cast<double>(row_bytes_) * H_ * (options.tiff_pyramid ? 4.0 / 3 : 1.0);
    const bool big = options.bigtiff || raw > 3.9e9;
    tif_.reset(open_tiff(file_.temp_path(), big ? "w8" : "w", &msgs_));
    if (!tif_) fail(ErrorKind::Io, path_, reason(msgs_, file_.temp_path(), "cannot create the TIFF file"));
    TIFF* t = tif_.get();
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(W_));
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(H_));
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, spp_);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, setup_.bits);
    TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, setup_.sample_format);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, spp_ >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    if (spp_ == 2 || spp_ == 4) {
      const std::uint16_t extra[1] = {EXTRASAMPLE_UNASSALPHA};
      TIFFSetField(t, TIFFTAG_EXTRASAMPLES, 1, extra);
    }
    TIFFSetField(t, TIFFTAG_COMPRESSION, compression);
    if (setup_.predictor != PREDICTOR_NONE) TIFFSetField(t, TIFFTAG_PREDICTOR, setup_.predictor);
    if (tiled_) {
      TIFFSetField(t, TIFFTAG_TILEWIDTH, static_cast<std::uint32_t>(uw_));
      TIFFSetField(t, TIFFTAG_TILELENGTH, static_cast<std::uint32_t>(uh_));
    } else {
      TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, static_cast<std::uint32_t>(uh_));
    }
    if (!options.strip) write_metadata(metadata);
    if (!msgs_.error.empty()) fail(ErrorKind::InvalidArgument, path_, reason(msgs_, file_.temp_path(), ""));

    for (auto& b : batches_) {
      b.pixels.resize(static_cast<std::size_t>(group_chunks_) * uh_ * row_bytes_);
      b.out.resize(static_cast<std::size_t>(group_chunks_) * across_);
    }
    scratch_.resize(threads_ + 1);
    encoders_.resize(threads_ + 1);
    pool_ = std::make_unique<ThreadPool>(threads_);
    if (options.tiff_pyramid && (W_ > uw_ || H_ > uh_)) start_level(options);
  }

  ~TiffWriter() override {
    // Abandoned (no finish): let the workers finish with the buffers, then drop the file.
    for (auto& b : batches_)
      if (b.group) ThreadPool::settle(*b.group);
    tif_.reset();
    level_.reset();  // an unfinished level removes its own temporary file; a finished one is removed here
    if (!level_path_.empty()) std::remove(level_path_.c_str());
  }

  void write_rows(const ImageView& rows) override {
    if (failed_) fail(ErrorKind::InvalidArgument, path_, "write after a failed write");
    if (rows.width != W_ || rows.format != in_)
      fail(ErrorKind::InvalidArgument, path_,
           fmt::format("rows of {} {} for a {}-wide {} image", rows.width, to_string(rows.format), W_, to_string(in_)));
    if (next_row_ + rows.height > H_) fail(ErrorKind::InvalidArgument, path_, "more rows written than the image has");
    try {
      for (int r = 0; r < rows.height; ++r) {
        Batch& b = batches_[cur_];
        std::uint8_t* dst = b.pixels.data() + static_cast<std::size_t>(b.rows) * row_bytes_;
        const auto* src = reinterpret_cast<const std::uint8_t*>(rows.row(r));
        if (gray_alpha_) {
          const std::size_t s = bytes_;
          for (int x = 0; x < W_; ++x) {
            std::memcpy(dst + (2 * x) * s, src + (4 * x) * s, s);
            std::memcpy(dst + (2 * x + 1) * s, src + (4 * x + 3) * s, s);
          }
        } else {
          std::memcpy(dst, src, row_bytes_);
        }
        ++b.rows;
        ++next_row_;
        if (b.rows == std::min(group_chunks_ * uh_, H_ - b.first_row)) dispatch();
        if (level_) feed_level(rows.row(r));
      }
    } catch (...) {
      failed_ = true;
      throw;
    }
  }

  void finish() override {
    if (failed_) fail(ErrorKind::InvalidArgument, path_, "cannot finish after a failed write");
    if (next_row_ != H_) fail(ErrorKind::InvalidArgument, path_, fmt::format("{} of {} rows written", next_row_, H_));
    try {
      for (auto& b : batches_)
        if (b.group) write_batch(b);
      msgs_.clear();
      if (!TIFFWriteDirectory(tif_.get())) fail(ErrorKind::Io, path_, reason(msgs_, file_.temp_path(), "write failed"));
      if (level_) append_levels();
      tif_.reset();
      if (!msgs_.error.empty()) fail(ErrorKind::Io, path_, reason(msgs_, file_.temp_path(), "write failed"));
      file_.commit(false);  // closes the stream AtomicFile opened (nothing went through it) and renames
    } catch (...) {
      failed_ = true;
      throw;
    }
  }

 private:
  struct Batch {
    std::vector<std::uint8_t> pixels;  // group_chunks_ * uh_ rows, stored layout
    int first_row = 0, rows = 0;
    std::vector<std::vector<std::uint8_t>> out;  // one compressed unit each
    std::shared_ptr<ThreadPool::Group> group;    // in flight
  };

  // Pyramid: the rows averaged 2 x 2 (the last row and column alone when the size is odd) go to a
  // writer of the half-size image, a TIFF of its own beside the temporary file, which does the same
  // for the next level down to one tile. At finish its pages are copied after this image's as
  // reduced-resolution pages, compressed units as they are. Memory: each level's two batches (half
  // the rows' width each time) and one row; disk: a third of the image for the levels meanwhile.
  void start_level(const WriteOptions& options) {
    WriteOptions lo = options;
    lo.strip = true;
    lo.bigtiff = false;
    lo.tiff_tile = {uw_, uh_};
    level_path_ = file_.temp_path() + ".level.tif";
    const int lw = (W_ + 1) / 2, lh = (H_ + 1) / 2;
    level_ = std::make_unique<TiffWriter>(level_path_, lw, lh, in_, Metadata{}, lo);
    const std::size_t px = in_.pixel_bytes();
    pending_.resize(static_cast<std::size_t>(W_) * px);
    half_.resize(static_cast<std::size_t>(lw) * px);
  }

  void feed_level(const std::byte* row) {
    const std::size_t bytes = pending_.size();
    if (!has_pending_ && next_row_ < H_) {
      std::memcpy(pending_.data(), row, bytes);
      has_pending_ = true;
      return;
    }
    const std::byte* a = has_pending_ ? pending_.data() : row;
    const std::byte* b = has_pending_ ? row : nullptr;
    switch (in_.type) {
      case PixelType::U8:
        halve(reinterpret_cast<const std::uint8_t*>(a), reinterpret_cast<const std::uint8_t*>(b));
        break;
      case PixelType::U16:
        halve(reinterpret_cast<const std::uint16_t*>(a), reinterpret_cast<const std::uint16_t*>(b));
        break;
      case PixelType::F32: halve(reinterpret_cast<const float*>(a), reinterpret_cast<const float*>(b)); break;
    }
    has_pending_ = false;
    ImageView v;
    v.data = half_.data();
    v.width = (W_ + 1) / 2;
    v.height = 1;
    v.format = in_;
    v.pitch = half_.size();
    level_->write_rows(v);
  }

  // One row of the level from rows a and b (b null: a alone), rounded to nearest as read_overview.
  template <class T> void halve(const T* a, const T* b) {
    const int ch = in_.channels, lw = (W_ + 1) / 2;
    T* out = reinterpret_cast<T*>(half_.data());
    for (int x = 0; x < lw; ++x) {
      const int x0 = 2 * x, n = std::min(2, W_ - x0);
      const unsigned count = static_cast<unsigned>(n * (b ? 2 : 1));
      using Sum = std::conditional_t<std::is_floating_point_v<T>, double, std::uint32_t>;
      for (int c = 0; c < ch; ++c) {
        Sum s = 0;
        for (int i = 0; i < n; ++i) {
          s += static_cast<Sum>(a[(x0 + i) * ch + c]);
          if (b) s += static_cast<Sum>(b[(x0 + i) * ch + c]);
        }
        if constexpr (std::is_floating_point_v<T>) out[x * ch + c] = static_cast<T>(s / count);
        else out[x * ch + c] = static_cast<T>((2 * s + count) / (2 * count));
      }
    }
  }

  // The level file's pages, each after the one written last, marked reduced-resolution.
  void append_levels() {
    level_->finish();
    level_.reset();
    copy_levels();
    std::remove(level_path_.c_str());
    level_path_.clear();
  }

  void copy_levels() {
    TiffMessages msgs;
    const std::unique_ptr<TIFF, TiffClose> src(open_tiff(level_path_, "rm", &msgs));
    if (!src) fail(ErrorKind::Io, path_, reason(msgs, level_path_, "cannot read the pyramid levels back"));
    TIFF* s = src.get();
    TIFF* d = tif_.get();
    std::vector<std::uint8_t> unit;
    do {
      std::uint32_t w = 0, h = 0, tw = 0, th = 0;
      std::uint16_t spp = 1, bps = 8, sf = SAMPLEFORMAT_UINT, photo = 0, comp = COMPRESSION_NONE, pred = PREDICTOR_NONE;
      TIFFGetField(s, TIFFTAG_IMAGEWIDTH, &w);
      TIFFGetField(s, TIFFTAG_IMAGELENGTH, &h);
      TIFFGetField(s, TIFFTAG_TILEWIDTH, &tw);
      TIFFGetField(s, TIFFTAG_TILELENGTH, &th);
      TIFFGetFieldDefaulted(s, TIFFTAG_SAMPLESPERPIXEL, &spp);
      TIFFGetFieldDefaulted(s, TIFFTAG_BITSPERSAMPLE, &bps);
      TIFFGetFieldDefaulted(s, TIFFTAG_SAMPLEFORMAT, &sf);
      TIFFGetField(s, TIFFTAG_PHOTOMETRIC, &photo);
      TIFFGetFieldDefaulted(s, TIFFTAG_COMPRESSION, &comp);
      TIFFGetFieldDefaulted(s, TIFFTAG_PREDICTOR, &pred);
      TIFFSetField(d, TIFFTAG_SUBFILETYPE, FILETYPE_REDUCEDIMAGE);
      TIFFSetField(d, TIFFTAG_IMAGEWIDTH, w);
      TIFFSetField(d, TIFFTAG_IMAGELENGTH, h);
      TIFFSetField(d, TIFFTAG_SAMPLESPERPIXEL, spp);
      TIFFSetField(d, TIFFTAG_BITSPERSAMPLE, bps);
      TIFFSetField(d, TIFFTAG_SAMPLEFORMAT, sf);
      TIFFSetField(d, TIFFTAG_PHOTOMETRIC, photo);
      TIFFSetField(d, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
      if (spp == 2 || spp == 4) {
        const std::uint16_t extra[1] = {EXTRASAMPLE_UNASSALPHA};
        TIFFSetField(d, TIFFTAG_EXTRASAMPLES, 1, extra);
      }
      TIFFSetField(d, TIFFTAG_COMPRESSION, comp);
      if (pred != PREDICTOR_NONE) TIFFSetField(d, TIFFTAG_PREDICTOR, pred);
      TIFFSetField(d, TIFFTAG_TILEWIDTH, tw);
      TIFFSetField(d, TIFFTAG_TILELENGTH, th);
      const std::uint32_t n = TIFFNumberOfTiles(s);
      for (std::uint32_t i = 0; i < n; ++i) {
        const auto bytes = static_cast<tmsize_t>(TIFFGetStrileByteCount(s, i));
        unit.resize(static_cast<std::size_t>(bytes));
        msgs_.clear();
        if (TIFFReadRawTile(s, i, unit.data(), bytes) != bytes || TIFFWriteRawTile(d, i, unit.data(), bytes) != bytes)
          fail(ErrorKind::Io, path_, reason(msgs_, file_.temp_path(), "writing a pyramid level failed"));
      }
      msgs_.clear();
      if (!TIFFWriteDirectory(d)) fail(ErrorKind::Io, path_, reason(msgs_, file_.temp_path(), "write failed"));
    } while (TIFFReadDirectory(s));
  }

  void write_metadata(const Metadata& md) {
    TIFF* t = tif_.get();
    if (!md.icc.empty()) TIFFSetField(t, TIFFTAG_ICCPROFILE, static_cast<std::uint32_t>(md.icc.size()), md.icc.data());
    if (!md.xmp.empty()) TIFFSetField(t, TIFFTAG_XMLPACKET, static_cast<std::uint32_t>(md.xmp.size()), md.xmp.data());
    if (md.orientation >= 2 && md.orientation <= 8) TIFFSetField(t, TIFFTAG_ORIENTATION, md.orientation);
    if (!md.exif.empty()) {
      const Ifd0Text text = exif_ifd0_text(md.exif);
      auto put = [&](ttag_t tag, const std::string& s) {
        if (!s.empty()) TIFFSetField(t, tag, s.c_str());
      };
      put(TIFFTAG_MAKE, text.make);
      put(TIFFTAG_MODEL, text.model);
      put(TIFFTAG_ARTIST, text.artist);
      put(TIFFTAG_COPYRIGHT, text.copyright);
      put(TIFFTAG_DATETIME, text.date_time);
      put(TIFFTAG_SOFTWARE, text.software);
      put(TIFFTAG_IMAGEDESCRIPTION, text.description);
    }
  }

  // The current batch is full (or the image complete): write out the one in flight, hand this one
  // to the workers, and fill the other meanwhile.
  void dispatch() {
    Batch& b = batches_[cur_];
    Batch& other = batches_[1 - cur_];
    if (other.group) write_batch(other);
    const int chunks = (b.rows + uh_ - 1) / uh_;
    b.group = pool_->submit(chunks * across_, [this, &b](int i, int worker) { encode_unit(b, i, worker); });
    cur_ = 1 - cur_;
    other.first_row = next_row_;
    other.rows = 0;
  }

  std::uint32_t unit_index(int cr, int tx) const {
    return static_cast<std::uint32_t>(static_cast<std::uint64_t>(cr) * across_ + tx);
  }

  // Worker: unit i of batch b (strip or tile, tiles padded with zeros) compressed into b.out[i].
  void encode_unit(Batch& b, int i, int worker) {
    const int crel = i / across_, tx = i % across_;
    const int top = crel * uh_;  // row within the batch
    std::uint8_t* data = nullptr;
    std::size_t size = 0;
    if (!tiled_) {  // a strip is rows of the batch as they are
      data = b.pixels.data() + static_cast<std::size_t>(top) * row_bytes_;
      size = static_cast<std::size_t>(std::min(uh_, b.rows - top)) * row_bytes_;
    } else {
      auto& buf = setup_.compression == COMPRESSION_NONE ? b.out[i] : scratch_[worker];
      buf.resize(unit_row_bytes_ * uh_);
      const std::size_t px = static_cast<std::size_t>(spp_) * bytes_;
      const int x0 = tx * uw_;
      const std::size_t n = static_cast<std::size_t>(std::min(uw_, W_ - x0)) * px;
      for (int r = 0; r < uh_; ++r) {
        std::uint8_t* d = buf.data() + static_cast<std::size_t>(r) * unit_row_bytes_;
        if (top + r < b.rows) {
          std::memcpy(d, b.pixels.data() + static_cast<std::size_t>(top + r) * row_bytes_ + x0 * px, n);
          std::memset(d + n, 0, unit_row_bytes_ - n);
        } else {
          std::memset(d, 0, unit_row_bytes_);
        }
      }
      data = buf.data();
      size = buf.size();
    }
    if (setup_.compression == COMPRESSION_NONE) {
      if (!tiled_) b.out[i].assign(data, data + size);
      return;
    }
    auto& enc = encoders_[worker];
    if (!enc) enc = std::make_unique<UnitEncoder>(setup_);
    enc->encode(data, size, b.out[i], path_);
  }

  // Caller: waits for the workers of b, then appends its units to the file in order.
  void write_batch(Batch& b) {
    auto g = std::move(b.group);
    ThreadPool::wait(*g, true);
    const int first_cr = b.first_row / uh_;
    for (int i = 0; i < g->n; ++i) {
      const auto& out = b.out[i];
      const std::uint32_t u = unit_index(first_cr + i / across_, i % across_);
      msgs_.clear();
      const tmsize_t n = static_cast<tmsize_t>(out.size());
      const tmsize_t w = tiled_ ? TIFFWriteRawTile(tif_.get(), u, const_cast<std::uint8_t*>(out.data()), n)
                                : TIFFWriteRawStrip(tif_.get(), u, const_cast<std::uint8_t*>(out.data()), n);
      if (w != n) fail(ErrorKind::Io, path_, reason(msgs_, file_.temp_path(), "write failed"));
    }
  }

  std::string path_;
  int W_, H_;
  Format in_;
  AtomicFile file_;
  TiffMessages msgs_;
  std::unique_ptr<TIFF, TiffClose> tif_;
  UnitSetup setup_;
  bool gray_alpha_ = false, tiled_ = false, failed_ = false;
  int spp_ = 1, bytes_ = 1;
  std::size_t row_bytes_ = 0, unit_row_bytes_ = 0;
  int uw_ = 0, uh_ = 0, across_ = 1, chunk_rows_ = 1, group_chunks_ = 1, threads_ = 1;
  int next_row_ = 0, cur_ = 0;
  Batch batches_[2];
  std::vector<std::vector<std::uint8_t>> scratch_;      // per worker: a tile gathered
  std::vector<std::unique_ptr<UnitEncoder>> encoders_;  // per worker, made on first use
  std::unique_ptr<TiffWriter> level_;                   // the pyramid's next level, if any
  std::string level_path_;
  std::vector<std::byte> pending_, half_;  // a row waiting for its pair; the averaged row
  bool has_pending_ = false;
  std::unique_ptr<ThreadPool> pool_;  // last: drained before the batches go
};

// ---------------------------------------------------------------------------------------------

bool tiff_sniff(std::span<const unsigned char> h) {
  if (h.size() < 4) return false;
  return (h[0] == 'I' && h[1] == 'I' && (h[2] == 42 || h[2] == 43) && h[3] == 0) ||
         (h[0] == 'M' && h[1] == 'M' && h[2] == 0 && (h[3] == 42 || h[3] == 43));
}

bool tiff_extension(const std::string& ext) { return ext == ".tif" || ext == ".tiff"; }

std::unique_ptr<ImageReader> tiff_open(const std::string& path, const Limits& limits) {
  return std::make_unique<TiffReader>(path, limits);
}

bool tiff_can_write(const Format& f, std::string* why) {
  if (f.channels == 1 || f.channels == 3 || f.channels == 4) return true;
  if (why) *why = fmt::format("TIFF output takes 1, 3 or 4 channels, not {}", f.channels);
  return false;
}

std::unique_ptr<ImageWriter> tiff_create(const std::string& path, int width, int height, Format format,
                                         const Metadata& metadata, const WriteOptions& options) {
  return std::make_unique<TiffWriter>(path, width, height, format, metadata, options);
}

}  // namespace

const FormatCodec& tiff_codec() {
  static const FormatCodec codec{"libtiff", [] { return true; }, tiff_sniff, tiff_extension,
                                 tiff_open, tiff_can_write,      tiff_create};
  return codec;
}

#else  // no libtiff in this build

const FormatCodec& tiff_codec() {
  static const FormatCodec codec{"libtiff", [] { return false; }, nullptr, nullptr, nullptr, nullptr, nullptr};
  return codec;
}

#endif

}  // namespace tf::io
