// CPU convolution: the reference arithmetic. Every convolution is fma_rows (rows.hpp) over rows of
// interleaved samples, so the order of taps per output is fixed (and equal to the CUDA kernels')
// whatever the vector width.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "tilefilter/engine/backend_rules.hpp"
#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/engine/fft_blocks.hpp"
#include "tilefilter/engine/tiling.hpp"
#include "tilefilter/util/error.hpp"

#include "engine/cpu/rows.hpp"

namespace tf::cpu {

namespace {

// Where a separable pass's output rows go: output row y is written to row(y, spare) and done(y, spare)
// is called once it is final, `spare` being a scratch row separable_rows keeps for it (one of two,
// alternating). RowsToPlane keeps every row in a plane; RowsToImage (below) stores each into the
// destination image as it comes, from the spare rows.
struct RowsToPlane {
  Plane& out;
  float* row(int y, float*) const { return out.row(y); }
  void done(int, float*) const {}
};

// A separable convolution's row pass then column pass, with the row-pass rows in a ring of kh + 1
// rows: row r is computed once, when the first output that needs it comes up, so the intermediate
// stays in cache (kh + 1 rows of n samples) instead of making a round trip through memory.
// The column pass takes two output rows at once (fma_column2), the last one alone when oh is odd.
// `source_row(r)` returns padded input row r of the rows the column pass needs, its first column the
// first the row pass reads; `rows` takes the oh output rows of n samples (channels interleaved).
template <class SourceRow, class Rows>
void separable_rows(const Convolution& conv, int channels, std::size_t n, int oh, SourceRow&& source_row,
                    const Rows& rows) {
  thread_local std::vector<float> ring;  // kh + 1 slots, then the two spare rows
  thread_local std::vector<const float*> column;
  const int kw = conv.kernel.width, kh = conv.kernel.height;
  const int slots = kh + 1;
  ring.resize(static_cast<std::size_t>(slots + 2) * n);
  column.resize(slots);
  auto slot = [&](int r) { return ring.data() + static_cast<std::size_t>(r % slots) * n; };
  auto spare = [&](int y) { return ring.data() + static_cast<std::size_t>(slots + (y & 1)) * n; };
  auto row_pass = [&](int r) {
    const float* src = source_row(r);
    fma_rows(slot(r), &src, 1, channels, conv.row.data(), kw, n, true);
  };
  for (int r = 0; r + 1 < kh; ++r) row_pass(r);
  int y = 0;
  for (; y + 1 < oh; y += 2) {
    row_pass(y + kh - 1);
    row_pass(y + kh);
    for (int k = 0; k <= kh; ++k) column[k] = slot(y + k);
    fma_column2(rows.row(y, spare(y)), rows.row(y + 1, spare(y + 1)), column.data(), conv.col.data(), kh, n);
    rows.done(y, spare(y));
    rows.done(y + 1, spare(y + 1));
  }
  if (y < oh) {
    row_pass(y + kh - 1);
    for (int k = 0; k < kh; ++k) column[k] = slot(y + k);
    fma_rows(rows.row(y, spare(y)), column.data(), kh, 0, conv.col.data(), 1, n, true);
    rows.done(y, spare(y));
  }
}

// One padded row: the in-image span converted in bulk, the border columns through the map.
template <class T>
void load_row(const T* src, const std::vector<int>& xmap, int x_lo, int x_hi, int channels, float fill, float* out) {
  const std::size_t C = static_cast<std::size_t>(channels);
  to_float(src + static_cast<std::size_t>(xmap[x_lo]) * C, out + x_lo * C, static_cast<std::size_t>(x_hi - x_lo) * C);
  auto border_column = [&](std::size_t x) {
    const int sx = xmap[x];
    for (std::size_t c = 0; c < C; ++c) out[x * C + c] = sx < 0 ? fill : static_cast<float>(src[sx * C + c]);
  };
  for (int x = 0; x < x_lo; ++x) border_column(x);
  for (std::size_t x = x_hi; x < xmap.size(); ++x) border_column(x);
}

// One convolution over `in`, written into `out` (out.rect = in.rect shrunk by `stage_halo`).
void convolve(const Convolution& conv, const Halo& stage_halo, const Plane& in, Plane& out) {
  const int C = in.channels;
  const Halo h = conv.halo();
  const int dx = stage_halo.left - h.left, dy = stage_halo.top - h.top;
  const Kernel& k = conv.kernel;
  const std::size_t x0 = static_cast<std::size_t>(dx) * C;
  if (conv.separable) {
    separable_rows(
        conv, C, out.stride(), out.rect.height, [&](int r) { return in.row(dy + r) + x0; }, RowsToPlane{out});
    return;
  }
  thread_local std::vector<const float*> rows;
  rows.resize(k.height);
  for (int y = 0; y < out.rect.height; ++y) {
    for (int ky = 0; ky < k.height; ++ky) rows[ky] = in.row(y + dy + ky) + x0;
    fma_rows(out.row(y), rows.data(), k.height, C, k.taps.data(), k.width, out.stride(), true);
  }
}

// A box_sum convolution over integer-valued samples: exact int64 window sums (a running sum along
// each row, then one down each column), each output float(double(S) / area) — O(1) a pixel.
void box_sum(const Convolution& conv, const Halo& stage_halo, const Plane& in, Plane& out) {
  thread_local std::vector<std::int64_t> rows_sum, column;
  const int C = in.channels;
  const Halo h = conv.halo();
  const int dx = stage_halo.left - h.left, dy = stage_halo.top - h.top;
  const int ow = out.rect.width, oh = out.rect.height, kw = conv.kernel.width, kh = conv.kernel.height;
  const std::size_t n = static_cast<std::size_t>(ow) * C, reach = static_cast<std::size_t>(kw - 1) * C;
  const double area = static_cast<double>(kw) * kh;
  const int rows = oh + kh - 1;
  rows_sum.resize(static_cast<std::size_t>(rows) * n);
  for (int r = 0; r < rows; ++r) {
    const float* src = in.row(dy + r) + static_cast<std::size_t>(dx) * C;
    std::int64_t* rs = rows_sum.data() + static_cast<std::size_t>(r) * n;
    for (int c = 0; c < C; ++c) {
      std::int64_t sum = 0;
      for (int k = 0; k < kw; ++k) sum += static_cast<std::int64_t>(src[static_cast<std::size_t>(k) * C + c]);
      rs[c] = sum;
    }
    for (std::size_t i = C; i < n; ++i)
      rs[i] = rs[i - C] + static_cast<std::int64_t>(src[i + reach]) - static_cast<std::int64_t>(src[i - C]);
  }
  column.assign(n, 0);
  for (int k = 0; k < kh; ++k) {
    const std::int64_t* rs = rows_sum.data() + static_cast<std::size_t>(k) * n;
    for (std::size_t i = 0; i < n; ++i) column[i] += rs[i];
  }
  for (int y = 0; y < oh; ++y) {
    if (y > 0) {
      const std::int64_t* enter = rows_sum.data() + static_cast<std::size_t>(y + kh - 1) * n;
      const std::int64_t* leave = rows_sum.data() + static_cast<std::size_t>(y - 1) * n;
      for (std::size_t i = 0; i < n; ++i) column[i] += enter[i] - leave[i];
    }
    float* o = out.row(y);
    for (std::size_t i = 0; i < n; ++i) o[i] = static_cast<float>(static_cast<double>(column[i]) / area);
  }
}

void convolve_any(const Convolution& conv, const Halo& stage_halo, const Plane& in, Plane& out, bool integer_samples) {
  if (conv.box_sum && integer_samples) box_sum(conv, stage_halo, in, out);
  else convolve(conv, stage_halo, in, out);
}

}  // namespace

void load_padded(const ImageView& src, const Rect& rect, const Border& border, Plane& out) {
  const int C = src.format.channels;
  out.reset(rect, C);
  std::vector<int> xmap(rect.width);
  for (int x = 0; x < rect.width; ++x) xmap[x] = border_index(rect.x + x, src.width, border.mode);
  const float fill = quantized_border_value(border, src.format.type);
  // The span of the rect inside the image (tiles always overlap the image).
  const int x_lo = std::clamp(-rect.x, 0, rect.width), x_hi = std::clamp(src.width - rect.x, x_lo, rect.width);
  for (int y = 0; y < rect.height; ++y) {
    float* dst = out.row(y);
    const int sy = border_index(rect.y + y, src.height, border.mode);
    if (sy < 0) {
      std::fill(dst, dst + out.stride(), fill);
      continue;
    }
    switch (src.format.type) {
      case PixelType::U8: load_row(src.row_as<std::uint8_t>(sy), xmap, x_lo, x_hi, C, fill, dst); break;
      case PixelType::U16: load_row(src.row_as<std::uint16_t>(sy), xmap, x_lo, x_hi, C, fill, dst); break;
      case PixelType::F32: load_row(src.row_as<float>(sy), xmap, x_lo, x_hi, C, fill, dst); break;
    }
  }
}

void apply_stage(const Stage& stage, const Plane& in, Plane& out, bool integer_samples) {
  thread_local Plane second;
  const Halo h = stage.halo();
  out.reset(shrink(in.rect, h), in.channels);
  convolve_any(stage.convs[0], h, in, out, integer_samples);
  if (stage.combine != Combine::Single) {
    second.reset(out.rect, in.channels);
    convolve_any(stage.convs[1], h, in, second, integer_samples);
    for (int y = 0; y < out.rect.height; ++y) {
      if (stage.combine == Combine::Magnitude) magnitude_row(out.row(y), out.row(y), second.row(y), out.stride());
      else sum_row(out.row(y), out.row(y), second.row(y), out.stride());
    }
  }
}

void quantize(Plane& p, PixelType type) {
  if (type == PixelType::F32) return;
  const float hi = type == PixelType::U8 ? 255.0f : 65535.0f;
  quantize_row(p.data.data(), p.data.size(), hi);
}

void resynthesize_border(Plane& p, int image_width, int image_height, const Border& border) {
  const int C = p.channels;
  const float fill = border.value;  // already quantized by the caller
  auto inside = [](int m, int lo, int len) { return m >= lo && m < lo + len; };
  // Columns of rows inside the image first, then whole rows outside it (their sources are fixed rows).
  for (int y = 0; y < p.rect.height; ++y) {
    const int iy = p.rect.y + y;
    if (iy < 0 || iy >= image_height) continue;
    float* row = p.row(y);
    for (int x = 0; x < p.rect.width; ++x) {
      const int ix = p.rect.x + x;
      if (ix >= 0 && ix < image_width) continue;
      const int m = border_index(ix, image_width, border.mode);
      if (m < 0) {
        std::fill(row + static_cast<std::size_t>(x) * C, row + static_cast<std::size_t>(x + 1) * C, fill);
      } else {
        if (!inside(m, p.rect.x, p.rect.width)) throw Error(ErrorKind::Internal, "border source outside the tile");
        std::memcpy(row + static_cast<std::size_t>(x) * C, row + static_cast<std::size_t>(m - p.rect.x) * C,
                    C * sizeof(float));
      }
    }
  }
  for (int y = 0; y < p.rect.height; ++y) {
    const int iy = p.rect.y + y;
    if (iy >= 0 && iy < image_height) continue;
    const int m = border_index(iy, image_height, border.mode);
    float* row = p.row(y);
    if (m < 0) {
      std::fill(row, row + p.stride(), fill);
    } else {
      if (!inside(m, p.rect.y, p.rect.height)) throw Error(ErrorKind::Internal, "border source outside the tile");
      std::memcpy(row, p.row(m - p.rect.y), p.stride() * sizeof(float));
    }
  }
}

namespace {

// The last stage's plane quantized for dst's type and written into dst at p.rect, row by row.
void quantize_store(Plane& p, const ImageView& dst) {
  const std::size_t x0 = static_cast<std::size_t>(p.rect.x) * p.channels;
  for (int y = 0; y < p.rect.height; ++y) quantize_store_row(p.row(y), p.stride(), dst, p.rect.y + y, x0);
}

// The rows of a job's last stage straight into the destination image (quantize_store_row), from
// separable_rows' two spare rows: no plane of the tile is held or read a second time.
struct RowsToImage {
  const ImageView& dst;
  Rect rect;  // the output rectangle, in the image
  int channels;
  float* row(int, float* spare) const { return spare; }
  void done(int y, float* spare) const {
    quantize_store_row(spare, static_cast<std::size_t>(rect.width) * channels, dst, rect.y + y,
                       static_cast<std::size_t>(rect.x) * channels);
  }
};

// A first stage that is one separable convolution (FMAs), straight from the source: each padded
// input row is built, row-passed and dropped, so no padded plane of the whole input rectangle is
// held — with a 2000-pixel halo that plane is (tile + 4000)^2 pixels. The same FMAs in the same
// order as load_padded + apply_stage, so the same bits.
bool streams_from_source(const Stage& stage, PixelType type) {
  if (stage.combine != Combine::Single || !stage.convs[0].separable) return false;
  return !(stage.convs[0].box_sum && type != PixelType::F32);
}

// How many rows ahead separable_from_source asks for the source row it will convert.
constexpr int kPrefetchRows = 2;

// `out_rect` = in_rect shrunk by the stage's halo; `rows` takes its rows.
template <class Rows>
void separable_from_source(const ImageView& src, const Rect& in_rect, const Border& border, const Stage& stage,
                           const Rect& out_rect, const Rows& rows) {
  thread_local std::vector<float> line;
  const Convolution& conv = stage.convs[0];
  const int C = src.format.channels;
  // The padded row covers the columns the row pass reads: [in_rect.x, in_rect.x + ow + kw - 1).
  const Rect row_rect{in_rect.x, 0, out_rect.width + conv.kernel.width - 1, 1};
  std::vector<int> xmap(row_rect.width);
  for (int x = 0; x < row_rect.width; ++x) xmap[x] = border_index(row_rect.x + x, src.width, border.mode);
  const float fill = border.value;
  const int x_lo = std::clamp(-row_rect.x, 0, row_rect.width);
  const int x_hi = std::clamp(src.width - row_rect.x, x_lo, row_rect.width);
  line.resize(static_cast<std::size_t>(row_rect.width) * C);
  const std::size_t n = static_cast<std::size_t>(out_rect.width) * C;
  auto source_row = [&](int r) {
#if defined(__GNUC__)
    // The in-image span of the source row kPrefetchRows ahead, into the cache while this one is
    // converted and row-passed: the rows of a tile narrower than the image are runs a whole image
    // row apart, which the hardware prefetchers do not follow across. A hint only: no bits depend on it.
    const int ahead = border_index(in_rect.y + r + kPrefetchRows, src.height, border.mode);
    if (ahead >= 0 && x_hi > x_lo) {
      const std::size_t sample_bytes = bytes_per_sample(src.format.type);
      const std::size_t span_bytes = static_cast<std::size_t>(x_hi - x_lo) * C * sample_bytes;
      const std::byte* p = src.row(ahead) + static_cast<std::size_t>(xmap[x_lo]) * C * sample_bytes;
      for (std::size_t b = 0; b < span_bytes; b += 64) __builtin_prefetch(p + b);
    }
#endif
    const int sy = border_index(in_rect.y + r, src.height, border.mode);
    if (sy < 0) {
      std::fill(line.begin(), line.end(), fill);
    } else {
      switch (src.format.type) {
        case PixelType::U8: load_row(src.row_as<std::uint8_t>(sy), xmap, x_lo, x_hi, C, fill, line.data()); break;
        case PixelType::U16: load_row(src.row_as<std::uint16_t>(sy), xmap, x_lo, x_hi, C, fill, line.data()); break;
        case PixelType::F32: load_row(src.row_as<float>(sy), xmap, x_lo, x_hi, C, fill, line.data()); break;
      }
    }
    return static_cast<const float*>(line.data());
  };
  separable_rows(conv, C, n, out_rect.height, source_row, rows);
}

}  // namespace

bool streams_rows(const TileJob& job) {
  return job.chain->size() == 1 && !chain_uses_fft(job) && streams_from_source((*job.chain)[0], job.src.format.type);
}

std::size_t worker_bytes(const TileJob& job, TileSize out) {
  if (!streams_rows(job)) return tile_working_set(out, job.src.format, chain_halo(*job.chain));
  const Kernel& k = (*job.chain)[0].convs[0].kernel;
  const std::size_t width = static_cast<std::size_t>(out.width);
  return ((k.height + 1) * width + 2 * width + width + k.width - 1) * job.src.format.channels * sizeof(float);
}

void filter_tile(const TileJob& job, const Tile& tile) {
  thread_local Plane a, b;
  const PixelType type = job.src.format.type;
  Border border = job.border;
  border.value = quantized_border_value(border, type);
  const Chain& chain = *job.chain;
  const int C = job.src.format.channels;
  if (streams_rows(job)) {  // source rows in, destination rows out
    const Rect out = shrink(tile.in, chain[0].halo());
    separable_from_source(job.src, tile.in, border, chain[0], out, RowsToImage{job.dst, out, C});
    return;
  }
  // FFT stages take whole blocks of their grid: the planes reach past tile.in where a block does.
  const bool fft = chain_uses_fft(job);
  std::vector<Rect> planes;
  if (fft) {
    std::vector<bool> on_blocks;
    for (const Stage& stage : chain) on_blocks.push_back(stage_uses_fft(stage));
    planes = stage_planes(chain, on_blocks, tile.out, job.src.width, job.src.height);
  }
  const Rect in = fft ? planes[0] : tile.in;
  const bool streamed = !fft && streams_from_source(chain[0], type);
  if (!streamed) load_padded(job.src, in, border, a);
  for (std::size_t s = 0; s < chain.size(); ++s) {
    if (s == 0 && streamed) {
      b.reset(shrink(in, chain[0].halo()), C);
      separable_from_source(job.src, in, border, chain[0], b.rect, RowsToPlane{b});
    } else if (fft && stage_uses_fft(chain[s])) {
      apply_stage_fft(chain[s], a, s + 1 < chain.size() ? planes[s + 1] : tile.out, job.src.width, job.src.height, b);
    } else apply_stage(chain[s], a, b, type != PixelType::F32);
    if (s + 1 < chain.size()) {  // the last stage's quantize goes with its store
      quantize(b, type);
      resynthesize_border(b, job.src.width, job.src.height, border);
    }
    std::swap(a, b);
  }
  quantize_store(a, job.dst);
}

}  // namespace tf::cpu
