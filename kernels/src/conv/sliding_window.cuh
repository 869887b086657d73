// The sliding window, per thread: a run of kRun outputs slides a kRun-pixel register window along
// the taps, one fmaf per tap and output in tap order. The inner loop is unrolled kRun steps, so
// every register index is a compile-time constant and nothing goes to local memory. The separable
// kernel uses slide() for its row and column passes, the 2-D one slide_rows() for every staged row.
// Device code only.
#pragma once
#include <cuda_runtime.h>

#include "conv/block_layout.hpp"
#include "conv/pixel_io.cuh"

namespace tf::cuda::conv {

// The sliding window: for i < kRun, acc0[i] += sum_k w(k + i) * t0[k] (and acc1 with t1), k = 0..K-1 in
// order. load(k, j) returns window element k + j for k a multiple of kRun and j < 2R - 1 (compile-time).
// Peel: the first group of kRun taps outside the loop over groups (K known at compile time and at
// least 2 kRun, where the compiler keeps the loop): accumulators the caller has just zeroed then take
// their first FMAs with a zero addend, and the zeroing instructions go (31 taps: 16 a pass).
template <int C, bool Use0, bool Use1, bool Peel = false, class Load>
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
  if constexpr (Peel) {
    // The tail group's start from K, not from the loop's exit: else the compiler loses it and
    // guards every tail tap.
    const int kt = K / kRun * kRun;
    if (kt > 0) {
#pragma unroll
      for (int u = 0; u < kRun; ++u) tap(0, u);
    }
    for (k = kRun; k < kt; k += kRun) {
#pragma unroll
      for (int u = 0; u < kRun; ++u) tap(k, u);
    }
    k = kt;
  } else {
    for (; k + kRun <= K; k += kRun) {
#pragma unroll
      for (int u = 0; u < kRun; ++u) tap(k, u);
    }
  }
  if (k < K) {
#pragma unroll
    for (int u = 0; u < kRun; ++u)
      if (k + u < K) tap(k, u);
  }
}

// The 2-D kernel's window over one staged row, which feeds the thread's R output rows r in [Lo, Hi]
// with kernel row q - r: for i < kRun, acc[r][i] += sum_k w(k + i) * t[k - r * ts] (t = kernel row q's
// taps, rows ts floats apart), k = 0..K-1 in order, as slide() per row. The taps of each 8-tap group
// are read before its FMAs, as two 16-byte loads per row when Taps4 (t 16-byte aligned, rows padded
// to a multiple of kRun): a quarter of the scalar loads. KC > 0 fixes K at compile time: no guards
// on the last group, and below 2 kRun no loop (31 taps keep the loop over groups: unrolled, the
// rows overflow the instruction cache).
template <int C, int R, int Lo, int Hi, int KC, bool Taps4, class Load>
__device__ __forceinline__ void slide_rows(Px<C> (&acc)[R][kRun], int K, const float* t, int ts, Load load) {
  if constexpr (KC > 0) K = KC;
  Px<C> w[kRun];
#pragma unroll
  for (int j = 0; j < kRun - 1; ++j) w[j] = load(0, j);
  auto group = [&](int k, bool last) {
    float tv[R][kRun];
    if constexpr (Taps4) {
#pragma unroll
      for (int r = Lo; r <= Hi; ++r) {
        const float4* tr = reinterpret_cast<const float4*>(t - r * ts + k);
        const float4 lo = tr[0];
        tv[r][0] = lo.x, tv[r][1] = lo.y, tv[r][2] = lo.z, tv[r][3] = lo.w;
        if (!last || k + 4 < K) {
          const float4 hi = tr[1];
          tv[r][4] = hi.x, tv[r][5] = hi.y, tv[r][6] = hi.z, tv[r][7] = hi.w;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kRun; ++u) {
      if (last && k + u >= K) break;
      w[(u + kRun - 1) % kRun] = load(k, u + kRun - 1);
#pragma unroll
      for (int r = Lo; r <= Hi; ++r) {
        const float tap = Taps4 ? tv[r][u] : t[k + u - r * ts];
#pragma unroll
        for (int i = 0; i < kRun; ++i) fma_px<C>(acc[r][i], w[(u + i) % kRun], tap);
      }
    }
  };
  int k = 0;
#pragma unroll(KC > 0 && KC < 2 * kRun ? kRun : 1)
  for (; k + kRun <= K; k += kRun) group(k, false);
  if (k < K) group(k, true);
}

}  // namespace tf::cuda::conv
