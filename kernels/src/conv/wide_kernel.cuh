// The wide path, for kernels the fused kernels do not take (a side over 255 taps, or too wide for
// their shared memory). wide_rows_kernel: a block stages one input row of kWideSpan + kw - 1 pixels
// through the maps (padded so its threads read distinct banks, WideRowLayout) and the taps of one
// kernel row, and its 128 threads slide 8-output runs along it; it is the separable row pass (into
// ConvArgs::inter) or, looping over the kernel rows in order, the whole 2-D convolution.
// wide_columns_kernel, the separable column pass: a block stages a 128-byte-wide tile of the
// intermediate and the column taps (WideColumnLayout) with asynchronous copies and its 512 threads
// slide 8-row runs down it, so every intermediate pixel a block stages feeds about kh FMAs per
// channel instead of 8. Every tap comes from shared memory, four at a time. The FMAs per output
// run in the order of docs/design.md, contract 2, so the bits equal the fused kernels' and the CPU's. Shapes:
// wide_launch_shape() (launch_shape.hpp). Device code only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "conv/block_layout.hpp"
#include "conv/pixel_io.cuh"
#include "conv_kernels.hpp"

namespace tf::cuda::conv {

template <int C> __device__ __forceinline__ Px<C>* inter_row(const ConvArgs& a, int r) {
  return reinterpret_cast<Px<C>*>(static_cast<unsigned char*>(a.inter) + static_cast<std::size_t>(r) * a.inter_pitch);
}

// The sliding window of sliding_window.cuh (acc[i] += sum_k w(k + i) * taps[k], k = 0..K-1 in
// order, one fmaf each) with `taps` in shared memory and 16-byte aligned: every 8 taps are two
// vector loads instead of 8 scalar ones. load(k, j) returns window element k + j for k a multiple
// of kRun and j < 2 kRun - 1 (compile-time).
template <int C, class Load>
__device__ __forceinline__ void slide_staged_taps(Px<C> (&acc)[kRun], int K, const float* taps, Load load) {
  static_assert(kRun == 8, "two float4 tap loads per kRun taps");
  Px<C> w[kRun];
#pragma unroll
  for (int j = 0; j < kRun - 1; ++j) w[j] = load(0, j);
  // Tap k + u: window element k + u + kRun - 1 enters the register ring, then every output takes its FMA.
  auto tap = [&](int k, int u, float t) {
    w[(u + kRun - 1) % kRun] = load(k, u + kRun - 1);
#pragma unroll
    for (int i = 0; i < kRun; ++i) fma_px<C>(acc[i], w[(u + i) % kRun], t);
  };
  int k = 0;
  for (; k + kRun <= K; k += kRun) {
    const float4 lo = *reinterpret_cast<const float4*>(taps + k);
    const float4 hi = *reinterpret_cast<const float4*>(taps + k + 4);
    tap(k, 0, lo.x);
    tap(k, 1, lo.y);
    tap(k, 2, lo.z);
    tap(k, 3, lo.w);
    tap(k, 4, hi.x);
    tap(k, 5, hi.y);
    tap(k, 6, hi.z);
    tap(k, 7, hi.w);
  }
  if (k < K) {
#pragma unroll
    for (int u = 0; u < kRun; ++u)
      if (k + u < K) tap(k, u, taps[k + u]);
  }
}

// Row launch. Separable (General = false): block (bx, r) computes intermediate row r, region
// columns [kWideSpan bx, +kWideSpan), from plane row origin_y + r with the kw row taps.
// 2-D (General = true): block (bx, y) computes output row y, kernel rows ky = 0..kh-1 in order, each
// from plane row origin_y + y + ky. Rows past the grid's are taken in strides of gridDim.y.
template <int C, typename T, bool General>
__global__ void __launch_bounds__(S::kThreads, 4) wide_rows_kernel(const ConvArgs a) {
  extern __shared__ float4 smem4[];
  Px<C>* st = reinterpret_cast<Px<C>*>(smem4);
  const int kw = a.kw, kh = General ? a.kh : 1;
  float* taps =
      reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(smem4) + WideRowLayout::taps_offset(sizeof(Px<C>), kw));
  const int x0 = blockIdx.x * S::kWideSpan;
  const int span = min(S::kWideSpan, a.width - x0);
  const int staged = (span + kRun - 1) / kRun * kRun + kw - 1;  // whole runs: no thread reads past it
  const int tx = threadIdx.x * kRun;
  // Staged pixel c lives at c + c / kRun: this thread's window starts at tx + tx / kRun.
  const Px<C>* window = st + threadIdx.x * (kRun + 1);
  const Raw<C, T> fill = fill_raw<C, T>(a.in.fill);
  const int col0 = a.origin_x + x0;  // plane column of staged pixel 0
  const bool shift = col0 >= a.in.x_lo && col0 + staged <= a.in.x_hi;
  if constexpr (!General)
    for (int i = threadIdx.x; i < kw; i += S::kThreads) taps[i] = __ldg(a.taps + i);
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
      __syncthreads();  // the previous kernel row's window (and taps) are consumed
      if (shift) {
        // Inside the map's plain shift: no map loads, so the row's loads issue back to back.
        const unsigned char* row = src + static_cast<std::ptrdiff_t>(col0 + a.in.x_shift) * sizeof(Raw<C, T>);
#pragma unroll 4
        for (int c = threadIdx.x; c < staged; c += S::kThreads)
          st[c + c / kRun] = to_px<C, T>(by >= 0 ? load_raw<C, T>(row, c) : fill);
      } else {
        for (int c = threadIdx.x; c < staged; c += S::kThreads) {
          const int px = col0 + c;
          const int bx = px < a.in.width ? __ldg(a.in.xmap + px) : -1;
          st[c + c / kRun] = to_px<C, T>(by >= 0 && bx >= 0 ? load_raw<C, T>(src, bx) : fill);
        }
      }
      if constexpr (General)
        for (int i = threadIdx.x; i < kw; i += S::kThreads)
          taps[i] = __ldg(a.taps + static_cast<std::size_t>(ky) * kw + i);
      __syncthreads();
      if (tx < span)
        slide_staged_taps<C>(acc, kw, taps, [window](int k, int j) { return window[k + k / kRun + j + j / kRun]; });
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

// 16 bytes global -> shared without a register round trip (cp.async, sm_80 and later).
__device__ __forceinline__ void copy16_async(void* shared, const void* global) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(global));
#else
  *static_cast<float4*>(shared) = *static_cast<const float4*>(global);
#endif
}
__device__ __forceinline__ void copies_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::);
#endif
}

// Column launch of the separable wide path: block (t, s) computes region rows [L.rows t, +L.rows)
// of columns [L.columns s, +L.columns) (strips past the grid's in strides of gridDim.y); thread
// (col, run) the rows 8 run .. 8 run + 7 of its column, from intermediate rows y .. y + kh - 1 with
// the kh column taps, chunk by chunk in tap order.
template <int C, typename T>
__global__ void __launch_bounds__(S::kWideColumnThreads) wide_columns_kernel(const ConvArgs a) {
  extern __shared__ float4 smem4[];
  const WideColumnLayout L(a.kh, C);
  unsigned char* tile_bytes = reinterpret_cast<unsigned char*>(smem4);
  const Px<C>* tile = reinterpret_cast<const Px<C>*>(smem4);
  float* taps = reinterpret_cast<float*>(tile_bytes + L.taps_offset());
  const int col = threadIdx.x % L.columns, run = threadIdx.x / L.columns;
  const int y_base = blockIdx.x * L.rows, y0 = y_base + run * kRun;
  const int valid_rows = a.height + a.kh - 1;  // intermediate rows the row pass wrote
  const int strips = (a.width + L.columns - 1) / L.columns;
  constexpr int kCopiesPerRow = WideColumnLayout::kRowBytes / 16;
  for (int strip = blockIdx.y; strip < strips; strip += gridDim.y) {
    const int x = strip * L.columns + col;
    const bool active = y0 < a.height && x < a.width;
    // The strip's 128 bytes of every row lie inside the pitch (a multiple of 128 bytes).
    const unsigned char* inter =
        static_cast<const unsigned char*>(a.inter) + static_cast<std::size_t>(strip) * WideColumnLayout::kRowBytes;
    Px<C> acc[kRun];
#pragma unroll
    for (int i = 0; i < kRun; ++i) acc[i] = splat<C>(0.0f);
    for (int kc = 0; kc < a.kh; kc += L.chunk) {
      const int n = min(L.chunk, a.kh - kc);
      const int first = y_base + kc;  // intermediate row of staged row 0
      // Runs read staged rows up to L.rows - 2 + n; rows past the intermediate feed only rows past the region.
      const int rows = min(L.rows + n - 1, valid_rows - first);
      __syncthreads();  // the previous chunk (or strip) is consumed
      for (int i = threadIdx.x; i < rows * kCopiesPerRow; i += S::kWideColumnThreads) {
        const int r = i / kCopiesPerRow, q = i % kCopiesPerRow;
        copy16_async(tile_bytes + static_cast<std::size_t>(r) * WideColumnLayout::kRowBytes + q * 16,
                     inter + static_cast<std::size_t>(first + r) * a.inter_pitch + q * 16);
      }
      for (int i = threadIdx.x; i < n; i += S::kWideColumnThreads) taps[i] = __ldg(a.taps + a.kw + kc + i);
      copies_wait();
      __syncthreads();
      if (active) {
        const Px<C>* w = tile + run * kRun * L.columns + col;
        const int stride = L.columns;
        slide_staged_taps<C>(acc, n, taps, [w, stride](int k, int j) { return w[(k + j) * stride]; });
      }
    }
    if (active) emit_column<C, T>(a, x, y0, a.height, acc);
  }
}

}  // namespace tf::cuda::conv
