#include "tilefilter/io/overview.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "tilefilter/util/error.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf {

namespace {

constexpr std::size_t kBandBytes = 16u << 20;  // rows read at a time: about this much, two bands in flight
constexpr int kSegment = 512;                  // output pixels a job averages (a part of one output row)

// Where each output box starts along one axis of `in` source pixels: edges[o] .. edges[o + 1].
// `step` > 0: boxes of `step` pixels, the last one what is left (ceil(in / step) == out). Otherwise
// (a pyramid level whose size is not the image's divided exactly) the step that gives `out` boxes
// if there is one, else boxes spread evenly (each at least one pixel, since in >= out).
std::vector<int> box_edges(int in, int out, int step) {
  auto fits = [&](long long s) { return s >= 1 && (in + s - 1) / s == out; };
  if (step <= 0) {
    const long long up = (static_cast<long long>(in) + out - 1) / out, down = in / out;
    step = fits(up) ? static_cast<int>(up) : fits(down) ? static_cast<int>(down) : 0;
  }
  std::vector<int> edges(static_cast<std::size_t>(out) + 1);
  for (int o = 0; o <= out; ++o)
    edges[o] = step > 0 ? static_cast<int>(std::min<long long>(static_cast<long long>(o) * step, in))
                        : static_cast<int>(static_cast<long long>(o) * in / out);
  return edges;
}

// Sums columns over the rows of a box first (a vertical pass the compiler vectorises), then across
// each box. Integers sum exactly and round to nearest (the same bits however the work is split);
// floats sum in double in a fixed order (rows top to bottom, then columns left to right).
template <class T, class Acc>
void average_segment(const ImageView& rows, int r0, int r1, const std::vector<int>& xe, int ox0, int ox1,
                     std::vector<Acc>& col, T* out) {
  const int ch = rows.format.channels;
  const int x0 = xe[ox0], x1 = xe[ox1];
  const std::size_t n = static_cast<std::size_t>(x1 - x0) * ch;
  col.assign(n, Acc{});
  for (int r = r0; r < r1; ++r) {
    const T* p = rows.row_as<const T>(r) + static_cast<std::size_t>(x0) * ch;
    Acc* c = col.data();
    for (std::size_t i = 0; i < n; ++i) c[i] += static_cast<Acc>(p[i]);
  }
  const auto height = static_cast<std::uint64_t>(r1 - r0);
  for (int ox = ox0; ox < ox1; ++ox) {
    const std::size_t a = static_cast<std::size_t>(xe[ox] - x0) * ch,
                      b = static_cast<std::size_t>(xe[ox + 1] - x0) * ch;
    const std::uint64_t count = height * static_cast<std::uint64_t>(xe[ox + 1] - xe[ox]);
    for (int c = 0; c < ch; ++c) {
      Acc s{};
      for (std::size_t i = a + c; i < b; i += ch) s += col[i];
      T& dst = out[static_cast<std::size_t>(ox - ox0) * ch + c];
      if constexpr (std::is_floating_point_v<T>) dst = static_cast<T>(s / static_cast<double>(count));
      else dst = static_cast<T>((2 * static_cast<std::uint64_t>(s) + count) / (2 * count));
    }
  }
}

// Per worker: the column sums of the segment it is on.
struct Scratch {
  std::vector<std::uint32_t> u32;
  std::vector<std::uint64_t> u64;
  std::vector<double> f64;
};

void average_job(const ImageView& rows, int r0, int r1, const std::vector<int>& xe, int ox0, int ox1, Scratch& s,
                 std::byte* out) {
  switch (rows.format.type) {
    case PixelType::U8:
      if (r1 - r0 <= (1 << 24))  // 255 x 2^24 fits in 32 bits
        average_segment(rows, r0, r1, xe, ox0, ox1, s.u32, reinterpret_cast<std::uint8_t*>(out));
      else average_segment(rows, r0, r1, xe, ox0, ox1, s.u64, reinterpret_cast<std::uint8_t*>(out));
      break;
    case PixelType::U16:
      average_segment(rows, r0, r1, xe, ox0, ox1, s.u64, reinterpret_cast<std::uint16_t*>(out));
      break;
    case PixelType::F32: average_segment(rows, r0, r1, xe, ox0, ox1, s.f64, reinterpret_cast<float*>(out)); break;
  }
}

void check_cancel(const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) throw Error(ErrorKind::Cancelled, "overview cancelled");
}

// Averages all of `reader` (from row 0) into `out`, boxes by `step` (0: fitted to the sizes). The
// caller reads band k + 1 (a TIFF reader decodes its strips/tiles on every core meanwhile) while
// the workers average band k, so decoding and averaging overlap; two bands are in memory.
void reduce(ImageReader& reader, Image& out, int step, int threads, const std::function<void(double)>& progress,
            const std::atomic<bool>* cancel) {
  const ImageInfo& info = reader.info();
  const int ow = out.width(), oh = out.height();
  const std::vector<int> xe = box_edges(info.width, ow, step), ye = box_edges(info.height, oh, step);
  // Output rows a band: whole boxes, about kBandBytes (at least one box row).
  const std::size_t row_bytes = static_cast<std::size_t>(info.width) * info.format.pixel_bytes();
  const int box_rows = std::max(1, ye[1] - ye[0]);
  const int per_band = std::max<int>(1, static_cast<int>(kBandBytes / row_bytes / box_rows));
  int band_rows = 0;
  for (int oy = 0; oy < oh; oy += per_band) band_rows = std::max(band_rows, ye[std::min(oh, oy + per_band)] - ye[oy]);
  Image bands[2] = {Image(info.width, band_rows, info.format), Image(info.width, band_rows, info.format)};

  ThreadPool pool(std::max(1, threads) - 1);
  std::vector<Scratch> scratch(static_cast<std::size_t>(pool.workers()));
  const int segments = (ow + kSegment - 1) / kSegment;
  std::shared_ptr<ThreadPool::Group> busy;  // the band being averaged
  auto finish = [&] {
    if (busy) ThreadPool::wait(*std::exchange(busy, nullptr), true);
  };
  try {
    for (int oy0 = 0, b = 0; oy0 < oh; oy0 += per_band, b ^= 1) {
      check_cancel(cancel);
      const int oy1 = std::min(oh, oy0 + per_band), y0 = ye[oy0];
      ImageView rows = bands[b].view();
      rows.height = ye[oy1] - y0;
      reader.read_rows(y0, rows);
      finish();
      busy = pool.submit((oy1 - oy0) * segments, [&, rows, oy0, y0](int i, int worker) {
        const int oy = oy0 + i / segments, s = i % segments;
        const int ox0 = s * kSegment, ox1 = std::min(ow, ox0 + kSegment);
        average_job(rows, ye[oy] - y0, ye[oy + 1] - y0, xe, ox0, ox1, scratch[worker],
                    out.view().row(oy) + static_cast<std::size_t>(ox0) * info.format.pixel_bytes());
      });
      if (progress) progress(static_cast<double>(ye[oy1]) / info.height);
    }
    finish();
  } catch (...) {
    if (busy) ThreadPool::settle(*busy);  // the workers let go of the bands before they are freed
    throw;
  }
}

}  // namespace

int overview_factor(int width, int height, int max_side) {
  int f = 1;
  while ((std::max(width, height) + f - 1) / f > std::max(1, max_side)) f *= 2;
  return f;
}

Image read_overview(ImageReader& reader, int factor, const std::function<void(double)>& progress,
                    const std::atomic<bool>* cancel, int threads) {
  const ImageInfo& info = reader.info();
  if (factor < 1) throw Error(ErrorKind::InvalidArgument, "overview factor must be at least 1");
  if (threads <= 0) threads = default_threads();
  const int ow = (info.width + factor - 1) / factor, oh = (info.height + factor - 1) / factor;
  Image out(ow, oh, info.format);
  // The coarsest reduced level still at least the overview's size; the rest is averaged from it.
  // A level that turns out unreadable (or not what it claimed) is left for the full image.
  for (int i = static_cast<int>(info.levels.size()) - 1; i >= 0 && factor > 1; --i) {
    const LevelSize& l = info.levels[static_cast<std::size_t>(i)];
    if (l.width < ow || l.height < oh) continue;
    try {
      const auto level = reader.open_level(i);
      const ImageInfo& li = level->info();
      if (li.width >= ow && li.height >= oh && li.width <= info.width && li.height <= info.height &&
          li.format == info.format) {
        reduce(*level, out, 0, threads, progress, cancel);
        return out;
      }
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Cancelled) throw;
    }
    break;
  }
  reduce(reader, out, factor, threads, progress, cancel);
  return out;
}

Image read_region(ImageReader& reader, const Rect& region) {
  const ImageInfo& info = reader.info();
  if (region.x < 0 || region.y < 0 || region.width <= 0 || region.height <= 0 || region.right() > info.width ||
      region.bottom() > info.height)
    throw Error(ErrorKind::InvalidArgument, "region outside the image");
  Image out(region.width, region.height, info.format);
  const std::size_t px = info.format.pixel_bytes();
  const int band_rows = std::min(512, region.bottom());
  Image band(info.width, band_rows, info.format);
  // Sequential readers read from the top; the others start at the region.
  for (int y0 = info.access == RowAccess::Sequential ? 0 : region.y; y0 < region.bottom(); y0 += band_rows) {
    ImageView rows = band.view();
    rows.height = std::min(band_rows, region.bottom() - y0);
    reader.read_rows(y0, rows);
    for (int r = 0; r < rows.height; ++r) {
      const int y = y0 + r;
      if (y < region.y) continue;
      std::memcpy(out.view().row(y - region.y), rows.row(r) + region.x * px,
                  static_cast<std::size_t>(region.width) * px);
    }
  }
  return out;
}

}  // namespace tf
