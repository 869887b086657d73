// The libtiff reader: any band of rows, strips and tiles decoded on every core (format_tiff.cpp
// registers it; tiff_common.hpp holds what it shares with the writer, tiff_layout.hpp reads and checks
// the directory).
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
#include "tiff_layout.hpp"
#include "tilefilter/util/error.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf::io::tiff {
namespace {

// ---------------------------------------------------------------------------------------------
// Small helpers.

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

class TiffReader final : public ImageReader, private TiffLayout {
 public:
  // The image (place = {}) or one of its reduced levels (TiffLayout reads and checks its directory).
  TiffReader(const std::string& path, const Limits& limits, Place place = {})
      : TiffLayout(path), limits_(limits), place_(place) {
    TIFF* t = open_handles();
    // Pages: counted by walking the directory chain (no directory is parsed).
    const int pages = place_.full() ? TIFFNumberOfDirectories(t) : 1;
    handles_[0]->msgs->clear();
    if (pages > 1) info_.note = fmt::format("first page of {} read", pages);
    read_layout(t, limits, *handles_[0]->msgs, info_);
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
  // A handle per worker, the first one opened on the file and moved to place_'s directory.
  TIFF* open_handles() {
    const int threads = default_threads();
    for (int i = 0; i < threads; ++i) handles_.push_back(std::make_unique<Handle>());
    Handle& h = *handles_[0];
    h.tif = open_tiff(path_, "rm", h.msgs.get());
    if (!h.tif) fail(ErrorKind::Decode, path_, reason(*h.msgs, path_, "not a TIFF file libtiff can read"));
    if (!go_to(h.tif, place_)) fail(ErrorKind::Decode, path_, reason(*h.msgs, path_, "reduced level cannot be read"));
    return h.tif;
  }

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

  Limits limits_;
  Place place_;
  std::vector<Place> levels_;                     // where info_.levels lie
  std::vector<std::unique_ptr<Handle>> handles_;  // [0]: the caller's; [k]: worker k's
  int cache_cr_ = -1;                             // the chunk row whose units are kept
  std::vector<std::vector<std::uint8_t>> cache_;
  std::unique_ptr<ThreadPool> pool_;  // last: its threads stop before the handles close
};

}  // namespace

std::unique_ptr<ImageReader> tiff_open(const std::string& path, const Limits& limits) {
  return std::make_unique<TiffReader>(path, limits);
}

}  // namespace tf::io::tiff
#endif
