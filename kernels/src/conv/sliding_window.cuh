// The sliding window, per thread: a run of kRun outputs slides a kRun-pixel register window along
// the taps, one fmaf per tap and output in tap order. The inner loop is unrolled kRun steps, so
// every register index is a compile-time constant and nothing goes to local memory. Both kernels
// use it (the separable one for its row and column passes, the 2-D one for every kernel row).
// Device code only.
#pragma once
#include <cuda_runtime.h>

#include "conv/block_layout.hpp"
#include "conv/pixel_io.cuh"

namespace tf::cuda::conv {

// The sliding window: for i < kRun, acc0[i] += sum_k w(k + i) * t0[k] (and acc1 with t1), k = 0..K-1 in
// order. load(k, j) returns window element k + j for k a multiple of kRun and j < 2R - 1 (compile-time).
template <int C, bool Use0, bool Use1, class Load>
__device__ __forceinline__ void slide(Px<C> (&acc0)[kRun], Px<C> (&acc1)[kRun], int K, const float* t0, const float* t1,
                                      Load load) {
  Px<C> w[kRun];
#pragma unroll
  for (int j = 0; j < kRun - 1; ++j) w[j] = load(0, j);
  // Tap k + u: window element k + u + kRun - 1 enters the register ring, then every output takes its FMA.
  auto tap = [&](int k, int u) {
    w[(u + kRun - 1) % kRun] = load(k, u + kRun - 1);
    if (Use0) {
      const float t = t0[k + u];
#pragma unroll
      for (int i = 0; i < kRun; ++i) fma_px<C>(acc0[i], w[(u + i) % kRun], t);
    }
    if (Use1) {
      const float t = t1[k + u];
#pragma unroll
      for (int i = 0; i < kRun; ++i) fma_px<C>(acc1[i], w[(u + i) % kRun], t);
    }
  };
  int k = 0;
  for (; k + kRun <= K; k += kRun) {
#pragma unroll
    for (int u = 0; u < kRun; ++u) tap(k, u);
  }
  if (k < K) {
#pragma unroll
    for (int u = 0; u < kRun; ++u)
      if (k + u < K) tap(k, u);
  }
}

}  // namespace tf::cuda::conv
