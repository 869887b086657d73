// The libpng writer (format_png.cpp registers it; png_common.hpp holds what it shares with the
// reader). libpng writes the signature, header and metadata chunks; the image data is filtered and
// deflated in chunks of rows on every core (PngWriter below); never interlaced.
#include "png_writer.hpp"

#include "codec_checks.hpp"

#ifdef TF_HAVE_LIBPNG
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <png.h>
#include <zlib.h>

#include "metadata.hpp"
#include "png_common.hpp"
#include "tilefilter/util/atomic_write.hpp"
#include "tilefilter/util/error.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf::io::png {
namespace {

// The row filters of PNG (specification, section 9): each byte minus a predictor from the byte
// to its left (a pixel back: bpp bytes), the byte above, or both. `above` is the previous row of
// the image, zeros above the first.
enum PngFilter { kFilterNone = 0, kFilterSub, kFilterUp, kFilterAverage, kFilterPaeth, kFilterCount };

int paeth_predictor(int left, int above, int upper_left) {
  const int p = left + above - upper_left;
  const int pa = std::abs(p - left), pb = std::abs(p - above), pc = std::abs(p - upper_left);
  if (pa <= pb && pa <= pc) return left;
  return pb <= pc ? above : upper_left;
}

void filter_row(int filter, const std::uint8_t* row, const std::uint8_t* above, std::size_t bytes, std::size_t bpp,
                std::uint8_t* out) {
  for (std::size_t i = 0; i < bytes; ++i) {
    const int left = i >= bpp ? row[i - bpp] : 0;
    const int upper_left = i >= bpp ? above[i - bpp] : 0;
    int predicted = 0;
    switch (filter) {
      case kFilterSub: predicted = left; break;
      case kFilterUp: predicted = above[i]; break;
      case kFilterAverage: predicted = (left + above[i]) >> 1; break;
      case kFilterPaeth: predicted = paeth_predictor(left, above[i], upper_left); break;
      default: break;
    }
    out[i] = static_cast<std::uint8_t>(row[i] - predicted);
  }
}

// libpng's adaptive choice: the filter whose output, read as signed bytes, has the smallest sum of
// absolute values (the first such on a tie).
std::uint64_t signed_magnitude(const std::uint8_t* data, std::size_t bytes) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < bytes; ++i) sum += data[i] < 128 ? data[i] : 256 - data[i];
  return sum;
}

// PNG's image data on every core, as pigz compresses a stream: the rows are cut into chunks of
// about kChunkBytes of filtered data; a worker filters a chunk (adaptive filter per row, the row
// above taken from the chunk before) and deflates it on its own, primed with the last 32 KiB of the
// filtered data before it (as one stream would have seen them), ending on a byte boundary
// (Z_SYNC_FLUSH; Z_FINISH for the last). The caller writes the chunks in order as IDAT chunks: the
// first one opens the zlib stream with its header, the last closes it with the Adler-32 of the
// whole, combined from the chunks' own. Chunk boundaries depend on the image alone, so the file is
// the same whatever the thread count. A full chunk goes to the workers at once; a ring of 3 chunks
// a worker bounds the memory: the caller writes the oldest (helping with it when no worker has
// started it) before it fills its slot again. No batch barrier: on a busy machine one preempted
// worker would otherwise stall the others at every batch.
class PngWriter final : public ImageWriter {
 public:
  PngWriter(const std::string& path, int width, int height, Format format, const Metadata& metadata,
            const WriteOptions& options)
      : width_(width), height_(height), format_(format), file_(path) {
    codec_checks::check_writer_args(path, "PNG", png_can_write, format, width, height, PNG_UINT_31_MAX);
    gray_alpha_ = options.gray_alpha && format.channels == 4;
    sample_bytes_ = bytes_per_sample(format.type);
    pixel_bytes_ = static_cast<std::size_t>(gray_alpha_ ? 2 : format.channels) * sample_bytes_;
    row_bytes_ = static_cast<std::size_t>(width) * pixel_bytes_;
    if (row_bytes_ >= (std::size_t{1} << 30))  // zlib takes at most 4 GiB a call; a chunk holds a few rows
      throw Error(ErrorKind::InvalidArgument, fmt::format("{}: PNG rows of {} bytes are too long", path, row_bytes_));
    level_ = options.level < 0 ? Z_DEFAULT_COMPRESSION : std::min(options.level, 9);
    const std::size_t filtered_row = row_bytes_ + 1;
    dictionary_rows_ = static_cast<int>((kDictionaryBytes + filtered_row - 1) / filtered_row);
    chunk_rows_ = std::max(static_cast<int>(kChunkBytes / filtered_row), dictionary_rows_ + 1);
    chunk_rows_ = std::min(chunk_rows_, height);
    threads_ = options.threads > 0 ? options.threads : default_threads();
    const int chunks = (height + chunk_rows_ - 1) / chunk_rows_;
    ring_.resize(std::min(3 * (threads_ + 1), chunks));
    zeros_.assign(row_bytes_, 0);
    scratch_.resize(threads_ + 1);

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
    png_structp png = state_.png;
    png_infop info = state_.info;
    std::FILE* stream = file_.stream();
    const png_uint_32 w = static_cast<png_uint_32>(width), h = static_cast<png_uint_32>(height);
    // libpng writes the signature and the chunks before the image data; the IDAT chunks are ours.
    if (!png_ok(png, [&] {
          // A metadata block libpng finds malformed (an ICC profile for the wrong colour space)
          // is left out with a warning instead of failing the image.
          png_set_benign_errors(png, 1);
          png_init_io(png, stream);
          png_set_IHDR(png, info, w, h, depth, color, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                       PNG_FILTER_TYPE_DEFAULT);
          if (!exif.empty()) png_set_eXIf_1(png, info, static_cast<png_uint_32>(exif.size()), exif.data());
          if (!icc.empty())
            png_set_iCCP(png, info, "ICC profile", PNG_COMPRESSION_TYPE_BASE, icc.data(),
                         static_cast<png_uint_32>(icc.size()));
          if (!xmp.empty()) png_set_text(png, info, &xmp_text, 1);
          png_write_info(png, info);
        }))
      fail();
    pool_ = std::make_unique<ThreadPool>(threads_);
  }

  ~PngWriter() override {
    // Abandoned (no finish): let the workers finish with the buffers, then drop the file.
    for (auto& c : ring_)
      if (c.group) ThreadPool::settle(*c.group);
  }

  void write_rows(const ImageView& rows) override {
    codec_checks::check_rows_continue(file_.target(), rows, width_, height_, format_, next_row_, failed_);
    try {
      for (int r = 0; r < rows.height; ++r) {
        Chunk& c = current_chunk();
        std::uint8_t* dst = c.raw.data() + static_cast<std::size_t>(c.context + c.rows) * row_bytes_;
        store_row(reinterpret_cast<const std::uint8_t*>(rows.row(r)), dst);
        ++c.rows;
        ++next_row_;
        if (c.rows == chunk_rows_ || next_row_ == height_) {
          previous_ = &c;
          c.group = pool_->submit(1, [this, &c](int, int worker) { encode_chunk(c, worker); });
          ++submitted_;
        }
      }
    } catch (...) {
      failed_ = true;
      throw;
    }
  }

  void finish() override {
    if (failed_) throw Error(ErrorKind::Io, fmt::format("{}: cannot finish after an error", file_.target()));
    if (next_row_ != height_)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("{}: {} of {} rows written", file_.target(), next_row_, height_));
    try {
      while (written_ < submitted_) write_oldest();
    } catch (...) {
      failed_ = true;
      throw;
    }
    png_structp png = state_.png;
    if (!png_ok(png, [&] { png_write_chunk(png, reinterpret_cast<png_const_bytep>("IEND"), nullptr, 0); })) fail();
    state_.release();
    file_.commit();
  }

 private:
  static constexpr std::size_t kChunkBytes = 256 * 1024;      // filtered bytes a chunk (pigz: 128 KiB)
  static constexpr std::size_t kDictionaryBytes = 32 * 1024;  // deflate's window
  static constexpr std::size_t kIdatBytes = 1 << 20;          // at most this much data an IDAT chunk

  // Rows first..first+rows of the image, in PNG's byte order, after `context` rows of the image
  // above them: the dictionary's rows and the row above those (none at the top of the image).
  struct Chunk {
    int first = 0, rows = 0, context = 0;
    std::vector<std::uint8_t> raw;
    std::vector<std::uint8_t> out;             // deflate's output for rows first..first+rows
    uLong adler = 1;                           // Adler-32 of their filtered bytes
    std::shared_ptr<ThreadPool::Group> group;  // in flight
  };

  // The chunk that takes the next row, started (its context rows copied from the chunk before)
  // when it has none yet; its slot in the ring is written out first when it still holds the
  // oldest chunk in flight.
  Chunk& current_chunk() {
    Chunk& c = ring_[submitted_ % ring_.size()];
    if (c.group) write_oldest();
    if (c.rows == 0) {
      c.first = next_row_;
      c.context = std::min(next_row_, dictionary_rows_ + 1);
      c.raw.resize(static_cast<std::size_t>(c.context + chunk_rows_) * row_bytes_);
      if (c.context > 0) {
        const Chunk& p = *previous_;  // full, and read only by workers: its rows stay until it is written
        const std::size_t from = static_cast<std::size_t>(p.context + p.rows - c.context) * row_bytes_;
        std::memcpy(c.raw.data(), p.raw.data() + from, c.context * row_bytes_);
      }
    }
    return c;
  }

  // A row as PNG stores it: gray+alpha taken from RGBA (gray is the first channel, R = G = B for
  // such input), 16-bit samples big-endian.
  void store_row(const std::uint8_t* in, std::uint8_t* out) const {
    if (!gray_alpha_) {
      std::memcpy(out, in, row_bytes_);
    } else {
      const std::size_t s = sample_bytes_;
      for (int x = 0; x < width_; ++x) {
        std::memcpy(out + (2 * x) * s, in + (4 * x) * s, s);
        std::memcpy(out + (2 * x + 1) * s, in + (4 * x + 3) * s, s);
      }
    }
    if (sample_bytes_ == 2 && kLittleEndian)
      for (std::size_t i = 0; i < row_bytes_; i += 2) std::swap(out[i], out[i + 1]);
  }

  // Worker: filters the chunk's rows (and the dictionary's before them) and deflates them.
  void encode_chunk(Chunk& c, int worker) {
    const std::size_t filtered_row = row_bytes_ + 1;
    // The first held row is only the row above the dictionary's, unless it is the image's first.
    const int skip = c.first - c.context > 0 ? 1 : 0;
    std::vector<std::uint8_t>& filtered = scratch_[worker].filtered;
    std::vector<std::uint8_t>& trial = scratch_[worker].trial;
    filtered.resize((c.context - skip + c.rows) * filtered_row);
    trial.resize(row_bytes_);
    for (int k = skip; k < c.context + c.rows; ++k) {
      const std::uint8_t* row = c.raw.data() + static_cast<std::size_t>(k) * row_bytes_;
      const std::uint8_t* above = k > 0 ? row - row_bytes_ : zeros_.data();
      std::uint8_t* out = filtered.data() + static_cast<std::size_t>(k - skip) * filtered_row;
      // Filtering gains nothing in stored blocks (level 0).
      int best = kFilterNone;
      filter_row(kFilterNone, row, above, row_bytes_, pixel_bytes_, out + 1);
      if (level_ != 0) {
        std::uint64_t best_sum = signed_magnitude(out + 1, row_bytes_);
        for (int f = kFilterSub; f < kFilterCount; ++f) {
          filter_row(f, row, above, row_bytes_, pixel_bytes_, trial.data());
          const std::uint64_t sum = signed_magnitude(trial.data(), row_bytes_);
          if (sum < best_sum) {
            best_sum = sum;
            best = f;
            std::memcpy(out + 1, trial.data(), row_bytes_);
          }
        }
      }
      out[0] = static_cast<std::uint8_t>(best);
    }
    const std::size_t before = static_cast<std::size_t>(c.context - skip) * filtered_row;
    const std::uint8_t* data = filtered.data() + before;
    const std::size_t size = static_cast<std::size_t>(c.rows) * filtered_row;
    c.adler = adler32(1, data, static_cast<uInt>(size));

    // The first chunk carries the zlib header (zlib's own wrapper); the others are raw deflate.
    const bool first = c.first == 0, last = c.first + c.rows == height_;
    z_stream z{};
    if (deflateInit2(&z, level_, Z_DEFLATED, first ? 15 : -15, 8, level_ == 0 ? Z_DEFAULT_STRATEGY : Z_FILTERED) !=
        Z_OK)
      throw Error(ErrorKind::Internal, fmt::format("{}: zlib: cannot start deflate", file_.target()));
    struct End {
      z_stream* z;
      ~End() { deflateEnd(z); }
    } end{&z};
    const std::size_t dictionary = std::min(kDictionaryBytes, before);
    if (!first && dictionary > 0 && deflateSetDictionary(&z, data - dictionary, static_cast<uInt>(dictionary)) != Z_OK)
      throw Error(ErrorKind::Internal, fmt::format("{}: zlib: cannot set the dictionary", file_.target()));
    c.out.resize(deflateBound(&z, static_cast<uLong>(size)) + 16);
    z.next_in = const_cast<Bytef*>(data);
    z.avail_in = static_cast<uInt>(size);
    z.next_out = c.out.data();
    z.avail_out = static_cast<uInt>(c.out.size());
    const int rc = deflate(&z, last ? Z_FINISH : Z_SYNC_FLUSH);
    if ((last ? rc != Z_STREAM_END : rc != Z_OK) || z.avail_in != 0 || z.avail_out == 0)
      throw Error(ErrorKind::Internal, fmt::format("{}: zlib: deflate failed ({})", file_.target(), rc));
    c.out.resize(c.out.size() - z.avail_out);
  }

  // Caller: waits for the oldest chunk in flight (running it when no worker has started it), then
  // writes it as IDAT chunks.
  void write_oldest() {
    Chunk& c = ring_[written_ % ring_.size()];
    auto g = std::move(c.group);
    ThreadPool::wait(*g, true);
    const uLong size = static_cast<uLong>(c.rows) * (row_bytes_ + 1);
    adler_ = c.first == 0 ? c.adler : adler32_combine(adler_, c.adler, static_cast<z_off_t>(size));
    // The last chunk ends the stream with the Adler-32 of the whole (zlib wrote it when the first
    // chunk is the last as well).
    if (c.first + c.rows == height_ && c.first != 0) {
      png_byte trailer[4];
      png_save_uint_32(trailer, static_cast<png_uint_32>(adler_));
      c.out.insert(c.out.end(), trailer, trailer + 4);
    }
    png_structp png = state_.png;
    const Chunk& chunk = c;
    if (!png_ok(png, [&] {
          for (std::size_t at = 0; at < chunk.out.size(); at += kIdatBytes)
            png_write_chunk(png, reinterpret_cast<png_const_bytep>("IDAT"), chunk.out.data() + at,
                            std::min(kIdatBytes, chunk.out.size() - at));
        }))
      fail();
    c.rows = 0;
    ++written_;
  }

  [[noreturn]] void fail() {
    failed_ = true;
    throw Error(ErrorKind::Io, fmt::format("{}: cannot write PNG ({})", file_.target(), message_.text));
  }

  struct Scratch {
    std::vector<std::uint8_t> filtered, trial;
  };

  int width_, height_;
  Format format_;
  AtomicFile file_;
  PngWriteState state_;  // after file_: destroyed before the temporary file is removed
  PngMessage message_;
  bool gray_alpha_ = false;
  bool failed_ = false;
  std::size_t sample_bytes_ = 1, pixel_bytes_ = 1, row_bytes_ = 0;
  int level_ = Z_DEFAULT_COMPRESSION;
  int dictionary_rows_ = 1, chunk_rows_ = 1, threads_ = 1;
  int next_row_ = 0;
  std::vector<Chunk> ring_;                  // chunk i in slot i % size
  std::size_t submitted_ = 0, written_ = 0;  // chunks handed to the workers, chunks written
  const Chunk* previous_ = nullptr;          // the last full chunk
  uLong adler_ = 1;
  std::vector<std::uint8_t> zeros_;   // the row above the image
  std::vector<Scratch> scratch_;      // per worker
  std::unique_ptr<ThreadPool> pool_;  // last: drained before the batches go
};

}  // namespace

std::unique_ptr<ImageWriter> png_create(const std::string& path, int width, int height, Format format,
                                        const Metadata& metadata, const WriteOptions& options) {
  return std::make_unique<PngWriter>(path, width, height, format, metadata, options);
}

}  // namespace tf::io::png
#endif
