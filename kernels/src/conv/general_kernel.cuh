// The general 2-D kernel: an input tile in shared memory, kernel rows staged in chunks so that any
// kernel size fits; a thread computes a run of 8 pixels in two adjacent rows. Its shared-memory
// layout is GeneralLayout (block_layout.hpp); its grid and kernel rows per chunk come from
// general_launch_shape() (launch_shape.hpp). Device code only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "conv/block_layout.hpp"
#include "conv/pixel_io.cuh"
#include "conv/sliding_window.cuh"
#include "conv/staging.cuh"
#include "conv_kernels.hpp"

namespace tf::cuda::conv {

// Raw pixels a thread keeps in flight per staging batch.
template <int C, typename T> constexpr int kGeneralBatch = 6 / raw_regs<C, T>() < 1 ? 1 : 6 / raw_regs<C, T>();

// General 2-D convolution. Block (bx, by) computes region columns [32 bx, +32) x rows [64 by, +64);
// a thread computes a run of 8 pixels in two adjacent rows. Kernel rows are taken in chunks of
// `chunk` (all of them when they fit), so accumulators carry over between chunks in order.
template <int C, typename T> __global__ void __launch_bounds__(S::kThreads, 4) general_kernel(const ConvArgs a) {
  extern __shared__ float4 smem4[];
  const int kw = a.kw, kh = a.kh;
  const GeneralLayout L(kw, a.taps_per_chunk_rows);
  Px<C>* st = reinterpret_cast<Px<C>*>(smem4);
  float* taps = reinterpret_cast<float*>(st + static_cast<std::size_t>(L.rows()) * L.sw);
  int* sx = reinterpret_cast<int*>(taps + L.chunk * kw);

  const int bx = blockIdx.x * S::kBlockWidth, by = blockIdx.y * S::kGeneralRows;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int tx = lane & 3, pair = warp * 8 + (lane >> 2);
  stage_columns(sx, L.cols, a.origin_x + bx, a);
  const Raw<C, T> fill = fill_raw<C, T>(a.in.fill);
  const int col0 = a.origin_x + bx;
  const bool columns_shift = col0 >= a.in.x_lo && col0 + L.cols <= a.in.x_hi;

  Px<C> acc0[kRun], acc1[kRun];
#pragma unroll
  for (int i = 0; i < kRun; ++i) acc0[i] = acc1[i] = splat<C>(0.0f);

  for (int ky0 = 0; ky0 < kh; ky0 += L.chunk) {
    const int kc = min(L.chunk, kh - ky0);
    __syncthreads();  // the previous chunk is done with st and taps (and sx is written)
    const int rows = S::kGeneralRows + kc - 1, row0 = a.origin_y + by + ky0;
    ChunkStager<C, T, true, kGeneralBatch<C, T>, 8, 4> stager;
    stager.issue(a, sx, rows, L.cols, row0, col0, columns_shift, fill);
    for (int i = threadIdx.x; i < kc * kw; i += S::kThreads)
      taps[i] = __ldg(a.taps + static_cast<std::size_t>(ky0) * kw + i);
    stager.store(st, L.sw, a, sx, rows, L.cols, row0, fill);
    __syncthreads();
    // Staged row 2*pair + q feeds output row 0 with kernel row q and output row 1 with row q - 1.
    const Px<C>* mine = st + 2 * pair * L.sw + 9 * tx;
    auto window = [](const Px<C>* src) { return [src](int k, int j) { return src[(k + (k >> 3)) + (j + (j >> 3))]; }; };
    slide<C, true, false>(acc0, acc1, kw, taps, taps, window(mine));
    for (int q = 1; q < kc; ++q)
      slide<C, true, true>(acc0, acc1, kw, taps + q * kw, taps + (q - 1) * kw, window(mine + q * L.sw));
    slide<C, false, true>(acc0, acc1, kw, taps, taps + (kc - 1) * kw, window(mine + kc * L.sw));
  }
  const int y = by + 2 * pair, x0 = bx + tx * kRun;
  emit_run<C, T>(a, x0, y, acc0);
  emit_run<C, T>(a, x0, y + 1, acc1);
}

}  // namespace tf::cuda::conv
