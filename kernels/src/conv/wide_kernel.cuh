// The wide path, for kernels the fused kernels do not take (a side over 255 taps, or too wide for
// their shared memory): a block stages one input row of kWideSpan + kw - 1 pixels through the maps
// and its 128 threads slide 8-output runs along it, taps read from global memory (the same address
// across a warp). wide_rows_kernel is the separable row pass (into ConvArgs::inter) or, looping
// over the kernel rows in order, the whole 2-D convolution; wide_columns_kernel is the separable
// column pass over the intermediate. The FMAs per output run in the order of contract 2, so the
// bits equal the fused kernels' and the CPU's. Shapes: wide_launch_shape() (launch_shape.hpp).
// Device code only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "conv/block_layout.hpp"
#include "conv/pixel_io.cuh"
#include "conv/sliding_window.cuh"
#include "conv_kernels.hpp"

namespace tf::cuda::conv {

template <int C> __device__ __forceinline__ Px<C>* inter_row(const ConvArgs& a, int r) {
  return reinterpret_cast<Px<C>*>(static_cast<unsigned char*>(a.inter) + static_cast<std::size_t>(r) * a.inter_pitch);
}

// Row launch. Separable (General = false): block (bx, r) computes intermediate row r, region
// columns [kWideSpan bx, +kWideSpan), from plane row origin_y + r with the kw row taps.
// 2-D (General = true): block (bx, y) computes output row y, kernel rows ky = 0..kh-1 in order, each
// from plane row origin_y + y + ky. Rows past the grid's are taken in strides of gridDim.y.
template <int C, typename T, bool General>
__global__ void __launch_bounds__(S::kThreads) wide_rows_kernel(const ConvArgs a) {
  extern __shared__ float4 smem4[];
  Px<C>* st = reinterpret_cast<Px<C>*>(smem4);
  const int kw = a.kw, kh = General ? a.kh : 1;
  const int x0 = blockIdx.x * S::kWideSpan;
  const int span = min(S::kWideSpan, a.width - x0);
  const int staged = (span + kRun - 1) / kRun * kRun + kw - 1;  // whole runs: no thread reads past it
  const int tx = threadIdx.x * kRun;
  const Raw<C, T> fill = fill_raw<C, T>(a.in.fill);
  const int rows = General ? a.height : a.height + a.kh - 1;
  for (int y = blockIdx.y; y < rows; y += gridDim.y) {
    Px<C> acc[kRun];
#pragma unroll
    for (int i = 0; i < kRun; ++i) acc[i] = splat<C>(0.0f);
    for (int ky = 0; ky < kh; ++ky) {
      const int py = a.origin_y + y + ky;
      const int by = py < a.in.height ? __ldg(a.in.ymap + py) : -1;
      const unsigned char* src =
          static_cast<const unsigned char*>(a.in.data) + (by >= 0 ? static_cast<std::size_t>(by) * a.in.pitch : 0);
      __syncthreads();  // the previous kernel row's window is consumed
      for (int c = threadIdx.x; c < staged; c += S::kThreads) {
        const int px = a.origin_x + x0 + c;
        const int bx = px < a.in.width ? __ldg(a.in.xmap + px) : -1;
        st[c] = to_px<C, T>(by >= 0 && bx >= 0 ? load_raw<C, T>(src, bx) : fill);
      }
      __syncthreads();
      if (tx < span) {
        const Px<C>* window = st + tx;
        const float* t = a.taps + static_cast<std::size_t>(ky) * kw;
        slide<C, true, false>(acc, acc, kw, t, t, [window](int k, int j) { return window[k + j]; });
      }
    }
    if (tx < span) {
      if constexpr (General) {
        emit_run<C, T>(a, x0 + tx, y, acc);
      } else {
        Px<C>* out = inter_row<C>(a, y) + x0 + tx;
#pragma unroll
        for (int i = 0; i < kRun; ++i)
          if (tx + i < span) out[i] = acc[i];
      }
    }
  }
}

// Column launch of the separable wide path: thread (x, run) computes rows 8 run .. 8 run + 7 of
// region column x from intermediate rows y .. y + kh - 1 with the kh column taps.
template <int C, typename T> __global__ void __launch_bounds__(S::kThreads) wide_columns_kernel(const ConvArgs a) {
  const int x = blockIdx.x * S::kThreads + threadIdx.x;
  if (x >= a.width) return;
  const float* taps = a.taps + a.kw;
  for (int y0 = blockIdx.y * kRun; y0 < a.height; y0 += gridDim.y * kRun) {
    Px<C> acc[kRun];
#pragma unroll
    for (int i = 0; i < kRun; ++i) acc[i] = splat<C>(0.0f);
    const unsigned char* base = static_cast<const unsigned char*>(a.inter) + x * sizeof(Px<C>);
    const std::size_t pitch = a.inter_pitch;
    slide<C, true, false>(acc, acc, a.kh, taps, taps, [base, pitch, y0](int k, int j) {
      return *reinterpret_cast<const Px<C>*>(base + static_cast<std::size_t>(y0 + k + j) * pitch);
    });
    emit_column<C, T>(a, x, y0, a.height, acc);
  }
}

}  // namespace tf::cuda::conv
