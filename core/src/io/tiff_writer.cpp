// The libtiff streaming writer: strips or tiles compressed on every core, written in order
// (format_tiff.cpp registers it; tiff_common.hpp holds what it shares with the reader, tiff_units.hpp
// the settings of its strips and tiles and their encoder).
//
// Writer. Rows arrive top to bottom in bands of any height and gather into a batch of a few strip
// rows / tile rows (about 2 units per thread). A full batch goes to the workers while the caller
// fills the next one; each worker encodes one strip/tile at a time with libtiff's own codec on a
// private in-memory TIFF (predictor and compression exactly as libtiff writes them — Deflate through
// libdeflate where libtiff has it, LZW, ZSTD, PackBits, JPEG), and the caller appends the compressed
// units to the file in order with TIFFWriteRawStrip/Tile. Memory: two batches and their compressed units.
// JPEG (8-bit gray, or RGB stored as YCbCr 4:2:0 as vips and libtiff's tools write it): each strip or
// tile a complete JPEG stream with its own tables (JPEGTABLESMODE 0, so no JPEGTables tag has to match
// units made on different handles), strips a multiple of 16 rows. A compression kept from the input
// that the output cannot hold (JPEG for 16-bit, float or alpha; methods not written here) becomes
// deflate, and note() says so; asked for explicitly, it is refused.
// Metadata: ICC profile, XMP, orientation and the IFD0 text tags of the EXIF block (Make, Model,
// Artist, Copyright, DateTime, Software, ImageDescription). The EXIF sub-IFD (camera settings:
// exposure, lens, GPS) is not carried into TIFF output.
// With tiff_pyramid, reduced-resolution pages follow the image (start_level below).
#include "tiff_writer.hpp"

#ifdef TF_HAVE_LIBTIFF
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <tiffio.h>

#include "metadata.hpp"
#include "tiff_common.hpp"
#include "tiff_units.hpp"
#include "tilefilter/util/atomic_write.hpp"
#include "tilefilter/util/error.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf::io::tiff {
namespace {

// ---------------------------------------------------------------------------------------------
// Writer

class TiffWriter final : public ImageWriter {
 public:
  TiffWriter(const std::string& path, int width, int height, Format format, const Metadata& metadata,
             const WriteOptions& options)
      : path_(path), W_(width), H_(height), in_(format), file_(path, AtomicFile::Naming::Named) {
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
    const int compression = choose_compression(options, format);
    setup_.compression = compression;
    setup_.level = options.level;
    if (compression == COMPRESSION_JPEG) {
      setup_.level = options.level >= 1 ? std::min(options.level, 100) : jpeg_quality(options);
      setup_.jpeg_rgb = options.jpeg_rgb;
      // The input's subsampling, or 4:2:0 as vips and libtiff's tools write it.
      const ChromaSubsampling css = options.subsampling;
      setup_.ycbcr_h = css == ChromaSubsampling::S444 ? 1 : 2;
      setup_.ycbcr_v = css == ChromaSubsampling::S444 || css == ChromaSubsampling::S422 ? 1 : 2;
    }
    setup_.spp = spp_;
    setup_.bits = 8 * bytes_;
    setup_.sample_format = format.type == PixelType::F32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT;
    if (compression == COMPRESSION_ADOBE_DEFLATE || compression == COMPRESSION_LZW || compression == COMPRESSION_ZSTD)
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
      if (compression == COMPRESSION_JPEG) uh_ = std::min(H_, (uh_ + 15) / 16 * 16);  // whole 4:2:0 MCU rows
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
    set_sample_tags(t, setup_);
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

  std::string note() const override { return note_; }

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
      file_.commit();  // closes the stream AtomicFile opened (nothing went through it) and renames
    } catch (...) {
      failed_ = true;
      throw;
    }
  }

 private:
  // The libtiff compression for options.compression ("" = deflate). One the output cannot hold, or
  // that is not written here, is refused when asked for and replaced by deflate (with note_) when it
  // was only kept from the input.
  int choose_compression(const WriteOptions& options, const Format& format) {
    std::string c = options.compression.empty() || options.compression == "zip" ? "deflate" : options.compression;
    if (c == "old-jpeg" && options.compression_from_input) c = "jpeg";  // the same pixels, as JPEG is written today
    static constexpr std::pair<const char*, int> kMethods[] = {
        {"none", COMPRESSION_NONE}, {"deflate", COMPRESSION_ADOBE_DEFLATE}, {"lzw", COMPRESSION_LZW},
        {"zstd", COMPRESSION_ZSTD}, {"packbits", COMPRESSION_PACKBITS},     {"jpeg", COMPRESSION_JPEG}};
    int compression = -1;
    for (const auto& [name, code] : kMethods)
      if (c == name) compression = code;
    std::string why;  // after "<name> compression"
    if (compression < 0) {
      why = "is not written by TileFilter";
    } else if (!TIFFIsCODECConfigured(static_cast<std::uint16_t>(compression))) {
      why = "is not in this build of libtiff";
      compression = -1;
    } else if (compression == COMPRESSION_JPEG && !(format.type == PixelType::U8 && (spp_ == 1 || spp_ == 3))) {
      why = fmt::format("holds 8-bit gray or RGB samples, not {}",
                        gray_alpha_ ? fmt::format("gray+alpha {}", to_string(format.type)) : to_string(format));
      compression = -1;
    }
    if (compression >= 0) return compression;
    if (options.compression_from_input) {
      note_ = fmt::format("the input's {} compression {}: written with deflate", options.compression, why);
      return COMPRESSION_ADOBE_DEFLATE;
    }
    std::string choices;
    for (const auto& [name, code] : kMethods)
      if (TIFFIsCODECConfigured(static_cast<std::uint16_t>(code)))
        choices += (choices.empty() ? "" : ", ") + std::string(name);
    if (c == "jpeg")
      fail(ErrorKind::InvalidArgument, path_,
           fmt::format("JPEG compression {} (choose deflate, lzw, zstd or none)", why));
    if (why.starts_with("is not in"))
      fail(ErrorKind::InvalidArgument, path_, fmt::format("this build of libtiff cannot write {} compression", c));
    fail(ErrorKind::InvalidArgument, path_, fmt::format("unknown TIFF compression '{}' (choose {})", c, choices));
  }

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
      if (photo == PHOTOMETRIC_YCBCR) {  // JPEG: the level's subsampling and reference values, as written there
        std::uint16_t sub_h = 2, sub_v = 2;
        float* reference = nullptr;
        TIFFGetFieldDefaulted(s, TIFFTAG_YCBCRSUBSAMPLING, &sub_h, &sub_v);
        TIFFSetField(d, TIFFTAG_YCBCRSUBSAMPLING, sub_h, sub_v);
        if (TIFFGetFieldDefaulted(s, TIFFTAG_REFERENCEBLACKWHITE, &reference) && reference)
          TIFFSetField(d, TIFFTAG_REFERENCEBLACKWHITE, reference);
      }
      if (spp == 2 || spp == 4) {
        const std::uint16_t extra[1] = {EXTRASAMPLE_UNASSALPHA};
        TIFFSetField(d, TIFFTAG_EXTRASAMPLES, 1, extra);
      }
      TIFFSetField(d, TIFFTAG_COMPRESSION, comp);
      if (comp == COMPRESSION_JPEG) TIFFSetField(d, TIFFTAG_JPEGTABLESMODE, 0);
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
      for (const auto& [tag, field] : kIfd0TextTags)
        if (!(text.*field).empty()) TIFFSetField(t, tag, (text.*field).c_str());
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
    const int rows = static_cast<int>(size / row_bytes_);
    if (!tiled_ && setup_.compression == COMPRESSION_JPEG && rows < uh_) {
      // The last strip: a JPEG stream is exactly as tall as its strip (libtiff codes the unit's height).
      UnitSetup last = setup_;
      last.unit_height = rows;
      UnitEncoder(last).encode(data, size, b.out[i], path_);
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
  std::string note_;  // what note() says
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

}  // namespace

std::unique_ptr<ImageWriter> tiff_create(const std::string& path, int width, int height, Format format,
                                         const Metadata& metadata, const WriteOptions& options) {
  return std::make_unique<TiffWriter>(path, width, height, format, metadata, options);
}

}  // namespace tf::io::tiff
#endif
