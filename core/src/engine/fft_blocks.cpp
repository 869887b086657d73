#include "tilefilter/engine/fft_blocks.hpp"

#include <algorithm>
#include <cmath>

#include "tilefilter/engine/backend_rules.hpp"

namespace tf {

namespace {

struct AxisBlocks {
  int block = 0, size = 0;
};

// The smallest even fast transform size (fft_fast_size) of at least n. cuFFT's 2-D real
// transforms of an odd width gave a plane bits that followed its place in a batch and the planes
// beside it (one H100, CUDA 13.0, 2026-11-26: 384x245, 323x199 and 512x255 did, every even width
// probed did not), so a block's bits followed the tile that batched it; FFTW takes the same size.
int even_fast_size(int n) {
  int m = fft_fast_size(n);
  while (m % 2) m = fft_fast_size(m + 1);
  return m;
}

// Cheapest transform size per output sample for `taps` taps along an axis of `n` samples. Wide
// kernels may take transforms up to eight times their taps: at 255 taps 1536 (1282-sample blocks)
// costs 12.7 per output sample where 512 (258-sample blocks) cost 17.9, and took 2x the time on a GPU.
AxisBlocks axis_blocks(int taps, int n) {
  const int cap = std::max(512, 8 * taps);
  AxisBlocks best;
  double best_cost = 0;
  for (int p = 1; p <= cap; p *= 2)
    for (int size : {p, 3 * p}) {
      if (size > cap || size <= taps) continue;
      const int block = size - taps + 1;
      const double cost = size * std::log2(static_cast<double>(size)) / block;
      if (best.size == 0 || cost < best_cost || (cost == best_cost && size < best.size)) {
        best = {block, size};
        best_cost = cost;
      }
    }
  if (best.size == 0 || n <= best.block) return {std::max(n, 1), even_fast_size(std::max(n, 1) + taps - 1)};
  return best;
}

int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

FftBlocks fft_blocks(const Kernel& kernel, int image_w, int image_h) {
  const AxisBlocks x = axis_blocks(kernel.width, image_w), y = axis_blocks(kernel.height, image_h);
  return {x.block, y.block, x.size, y.size};
}

BlockSpan blocks_meeting(const FftBlocks& grid, const Rect& r, int image_w, int image_h) {
  const int x0 = std::max(r.x, 0), y0 = std::max(r.y, 0);
  const int x1 = std::min(r.right(), image_w), y1 = std::min(r.bottom(), image_h);
  if (x1 <= x0 || y1 <= y0) return {};
  return {floor_div(x0, grid.block_w), floor_div(y0, grid.block_h), floor_div(x1 - 1, grid.block_w) + 1,
          floor_div(y1 - 1, grid.block_h) + 1};
}

Rect block_rect(const FftBlocks& grid, int bx, int by, int image_w, int image_h) {
  const int x = bx * grid.block_w, y = by * grid.block_h;
  return {x, y, std::min(grid.block_w, image_w - x), std::min(grid.block_h, image_h - y)};
}

Rect block_cover(const FftBlocks& grid, const Rect& r, int image_w, int image_h) {
  const BlockSpan s = blocks_meeting(grid, r, image_w, image_h);
  if (s.count() == 0) return r;
  const Rect first = block_rect(grid, s.x0, s.y0, image_w, image_h);
  const Rect last = block_rect(grid, s.x1 - 1, s.y1 - 1, image_w, image_h);
  return {first.x, first.y, last.right() - first.x, last.bottom() - first.y};
}

std::vector<Rect> stage_planes(const Chain& chain, const std::vector<bool>& on_blocks, const Rect& out, int image_w,
                               int image_h) {
  std::vector<Rect> planes(chain.size());
  Rect need = out;
  for (std::size_t s = chain.size(); s-- > 0;) {
    Rect reach = need;
    if (s < on_blocks.size() && on_blocks[s]) {
      const Rect cover = block_cover(fft_blocks(chain[s].convs.at(0).kernel, image_w, image_h), need, image_w, image_h);
      const int x0 = std::min(need.x, cover.x), y0 = std::min(need.y, cover.y);
      reach = {x0, y0, std::max(need.right(), cover.right()) - x0, std::max(need.bottom(), cover.bottom()) - y0};
    }
    const Halo h = chain[s].halo();
    planes[s] = {reach.x - h.left, reach.y - h.top, reach.width + h.left + h.right, reach.height + h.top + h.bottom};
    need = planes[s];
  }
  return planes;
}

}  // namespace tf
