// The separable kernel: a row pass into a shared-memory ring of float32 rows and a column pass out
// of it, fused in one launch; one block walks down a 32-pixel-wide column strip. Its shared-memory
// layout is SepLayout (block_layout.hpp); its grid, rows per block and staged rows come from
// separable_launch_shape() (launch_shape.hpp). Device code only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>

#include "conv/block_layout.hpp"
#include "conv/pixel_io.cuh"
#include "conv/sliding_window.cuh"
#include "conv/staging.cuh"
#include "conv_kernels.hpp"

namespace tf::cuda::conv {

// Raw pixels a thread keeps in flight per staging batch.
template <int C, typename T> constexpr int kSepBatch = 12 / raw_regs<C, T>() < 1 ? 1 : 12 / raw_regs<C, T>();
// Registers for the halo columns of a chunk: 8, or with the width known at compile time just enough
// for a full chunk of kSepStepRows rows if that is fewer (9 taps u8: 2 pixels a thread, where 8
// unrolled slots mostly idled).
template <int C, typename T, int KW> constexpr int sep_halo_regs() {
  const int chunk = (S::kSepStepRows * (KW - 1) + S::kThreads - 1) / S::kThreads * raw_regs<C, T>();
  return KW > 0 && chunk < 8 ? chunk : 8;
}
template <int C, typename T, int KW> constexpr int kSepHaloRegs = sep_halo_regs<C, T, KW>();
// The fast staging path: LaneStager's fixed places when the width is known, leaves at most 32 halo
// columns and a chunk's pixels fit AffineStager's budget of 24 registers in flight (u8 RGBA, one- and
// two-register pixels of narrow kernels: wider ones would spill, f32 RGBA 31 taps 384 bytes), else
// AffineStager's cursors.
template <int C, typename T, int KW> constexpr bool sep_lane_staging() {
  if constexpr (KW > 0 && KW - 1 <= S::kBlockWidth) {
    using L = LaneStager<C, T, S::kBlockWidth + KW - 1>;
    return raw_regs<C, T>() * (L::kMain + L::kHalo) <= 24;
  } else {
    return false;
  }
}
template <int C, typename T, int KW>
using SepStager =
    ChunkStagerOf<C, T, false, kSepBatch<C, T>,
                  std::conditional_t<sep_lane_staging<C, T, KW>(), LaneStager<C, T, S::kBlockWidth + KW - 1>,
                                     AffineStager<C, T, false, 16, kSepHaloRegs<C, T, KW>>>>;

// Separable convolution. Block (bx, seg) computes region columns [32 bx, 32 bx + 32) of rows
// [seg * rows_per_block, ...). Staged input rows go through the row pass into a ring of float32
// rows (tmp row g <-> plane row origin_y + g, ring slot g mod rb), and each 32-row step's column
// pass reads the ring. The ring size is a multiple of 8 and its first 8 rows are mirrored past its
// end, so a column-pass window (8-row aligned groups of up to 15 rows) never wraps: every load is
// a fixed offset from one base per 8 taps. The next chunk's global loads are issued before the
// current chunk's row and column passes, so their latency hides behind this block's own work.
// KW, KH > 0 fix the tap counts at compile time (launch.cu instantiates the common sizes): the
// sliding windows lose their loop and the guards of the last 8-tap group, and the ring arithmetic
// its divisions (9 taps: 88 -> 118 Gpix/s on an H200, u8 RGBA); 0 reads them from `a`.
template <int C, typename T, int KW, int KH>
__global__ void __launch_bounds__(S::kThreads, 4) separable_kernel(const ConvArgs a, int stage_rows) {
  extern __shared__ float4 smem4[];
  const int kw = KW > 0 ? KW : a.kw, kh = KH > 0 ? KH : a.kh;
  const SepLayout L(kw, kh, stage_rows);
  Px<C>* st = reinterpret_cast<Px<C>*>(smem4);
  Px<C>* ring = st + static_cast<std::size_t>(L.stage_rows) * L.sw;
  float* taps =
      reinterpret_cast<float*>(ring + static_cast<std::size_t>(L.rb + SepLayout::kMirror) * SepLayout::kRingStride);
  int* sx = reinterpret_cast<int*>(taps + kw + kh);

  const int bx = blockIdx.x * S::kBlockWidth;
  const int y_begin = blockIdx.y * a.rows_per_block;
  const int y_end = min(a.height, y_begin + a.rows_per_block);
  for (int i = threadIdx.x; i < kw + kh; i += S::kThreads) taps[i] = __ldg(a.taps + i);
  stage_columns(sx, L.cols, a.origin_x + bx, a);
  const Raw<C, T> fill = fill_raw<C, T>(a.in.fill);
  __syncthreads();

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rp_row = warp * 8 + (lane & 7), rp_x = (lane >> 3) * kRun;  // row pass: 8 rows a warp, 4 runs a row
  // Output step y needs tmp rows up to need(y); chunks of at most stage_rows rows fill them in order.
  auto need = [&](int y) { return min(y + S::kSepStepRows, y_end) + kh - 1; };
  const int col0 = a.origin_x + bx;
  const bool columns_shift = col0 >= a.in.x_lo && col0 + L.cols <= a.in.x_hi;
  SepStager<C, T, KW> stager(a);
  int y = y_begin, next = y_begin;
  int n = min(L.stage_rows, need(y) - next);
  stager.issue(a, sx, n, L.cols, a.origin_y + next, col0, columns_shift, fill);
  for (;;) {
    stager.store(st, L.sw, a, sx, n, L.cols, a.origin_y + next, fill);
    __syncthreads();
    // Prefetch the following chunk (for this step, or the next one when this chunk completes it).
    const int after = next + n;
    const int fy = after >= need(y) ? y + S::kSepStepRows : y;
    int fn = 0;
    if (fy < y_end) {
      fn = min(L.stage_rows, need(fy) - after);
      stager.issue(a, sx, fn, L.cols, a.origin_y + after, col0, columns_shift, fill);
    }
    if (rp_row < n) {
      Px<C> acc[kRun];
#pragma unroll
      for (int i = 0; i < kRun; ++i) acc[i] = splat<C>(0.0f);
      const Px<C>* src = st + rp_row * L.sw + rp_x;
      slide<C, true, false, (C > 1 && KW >= 2 * kRun)>(acc, acc, kw, taps, taps,
                                                       [src](int k, int j) { return src[k + j]; });
      const int slot = (next + rp_row) % L.rb;
      Px<C>* dst = ring + slot * SepLayout::kRingStride + rp_x;
#pragma unroll
      for (int i = 0; i < kRun; ++i) dst[i] = acc[i];
      if (slot < SepLayout::kMirror) {
        Px<C>* copy = dst + L.rb * SepLayout::kRingStride;
#pragma unroll
        for (int i = 0; i < kRun; ++i) copy[i] = acc[i];
      }
    }
    __syncthreads();
    next = after;
    if (next >= need(y)) {
      // Column pass: warp w computes rows y + 8w .. y + 8w + 7 at column `lane`.
      const int y0 = y + warp * kRun;
      if (y0 < y_end) {
        Px<C> acc[kRun];
#pragma unroll
        for (int i = 0; i < kRun; ++i) acc[i] = splat<C>(0.0f);
        const int rb = L.rb, s0 = y0 % rb;  // a multiple of 8, as y0 and rb are
        const Px<C>* col = ring + lane;
        slide<C, true, false, (C > 1 && KH >= 2 * kRun)>(
            acc, acc, kh, taps + kw, taps + kw, [col, s0, rb](int k, int j) {
              int b = s0 + k;  // k < kh + 8 <= rb + 8: one wrap at most, and b stays a multiple of 8
              b = b >= rb ? b - rb : b;
              return col[(b + j) * SepLayout::kRingStride];
            });
        const int x = bx + lane;
        if (x < a.width) emit_column<C, T>(a, x, y0, y_end, acc);
      }
      y += S::kSepStepRows;
      if (y >= y_end) break;
    }
    n = fn;
  }
}

}  // namespace tf::cuda::conv
