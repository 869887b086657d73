// The general 2-D kernel: an input tile in shared memory, kernel rows staged in chunks so that any
// kernel size fits; a thread computes a run of 8 pixels in two adjacent rows. Its shared-memory
// layout is GeneralLayout (block_layout.hpp); its grid and kernel rows per chunk come from
// general_launch_shape() (launch_shape.hpp). Device code only.
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
template <int C, typename T> constexpr int kGeneralBatch = 6 / raw_regs<C, T>() < 1 ? 1 : 6 / raw_regs<C, T>();

// Taps read four at a time for 8- and 16-bit RGBA: a quarter of the shared loads of taps (on an
// H200, 9x9 u8 at four blocks a multiprocessor: 45 -> 49 Gpix/s; 31x31 u8 at two: 6.19 -> 6.44, u16
// 5.87 -> 6.16). Not for float4 samples (31x31 f32: no gain) or fewer channels.
template <int C, typename T> constexpr bool kGeneralTaps4 = C == 4 && sizeof(T) <= 2;

// The chunk's staging, with the pixels each thread keeps in flight for the main and the halo
// columns. At two blocks a multiprocessor, while one block stages only the other's four warps feed
// the FMA pipe, so the chunk is staged in fewer round trips to memory: 16 main and 8 halo pixels for
// 8-bit samples, 12 and 8 for 16-bit RGBA, 6 and 4 for float RGBA, where four blocks keep 8 and 4
// registers' worth (31x31 on an H200 with the taps four at a time: u8 6.44 -> 6.51 Gpix/s, u16
// 5.86 -> 6.23, f32 5.55 -> 6.05).
// When the kernel width is fixed at compile time and a chunk of KW kernel rows fits in flight (24
// registers of pixels at four blocks a multiprocessor, 48 at two: u8 RGBA 9x9 and 31x31),
// GeneralLaneStager stages it from fixed per-thread places in one round trip.
template <int C, typename T, int MinBlocks>
using GeneralAffineStager = AffineStager<C, T, true, MinBlocks == 2 ? 24 : 8, MinBlocks == 2 ? 16 : 4,
                                         MinBlocks == 2 ? 16 : 8, MinBlocks == 2 ? 8 : 64>;
template <int C, typename T, int KW, int MinBlocks>
constexpr bool kGeneralLanes = C == 4 && KW > 1 && KW <= 33 &&
                               general_lane_pixels(KW) * raw_regs<C, T>() <= (MinBlocks == 2 ? 48 : 24);
template <int C, typename T, int KW, int MinBlocks>
using GeneralStager = ChunkStagerOf<C, T, true, kGeneralBatch<C, T>,
                                    std::conditional_t<kGeneralLanes<C, T, KW, MinBlocks>, GeneralLaneStager<C, T, KW>,
                                                       GeneralAffineStager<C, T, MinBlocks>>>;

// One staged row through slide_rows() for output rows [lo, hi] of the thread's two (lo <= hi):
// the three cases as instantiations, so that every accumulator index stays a constant.
template <int C, int KW, bool Taps4, class Load>
__device__ __forceinline__ void slide_pair(int lo, int hi, Px<C> (&acc)[2][kRun], int K, const float* t, int ts,
                                           Load load) {
  if (lo == 0 && hi == 1) slide_rows<C, 2, 0, 1, KW, Taps4>(acc, K, t, ts, load);
  else if (lo == 0) slide_rows<C, 2, 0, 0, KW, Taps4>(acc, K, t, ts, load);
  else slide_rows<C, 2, 1, 1, KW, Taps4>(acc, K, t, ts, load);
}

// General 2-D convolution. Block (bx, by) computes region columns [32 bx, +32) x rows [64 by, +64);
// a thread computes a run of 8 pixels in two adjacent rows. Kernel rows are taken in chunks of
// `chunk` (all of them when they fit), so accumulators carry over between chunks in order. KW > 0
// is the kernel width fixed at compile time (launch.cu instantiates the common ones), else a.kw.
// MinBlocks is the residency the launch shape allows (4, or 2 when shared memory holds two blocks):
// at 2 the compiler may use 255 registers, which schedules the shared loads of wide kernels further
// ahead of their FMAs (31x31 u8: 5.89 -> 6.16 Gpix/s on an H200).
template <int C, typename T, int KW, int MinBlocks>
__global__ void __launch_bounds__(S::kThreads, MinBlocks) general_kernel(const ConvArgs a) {
  extern __shared__ float4 smem4[];
  const int kw = KW > 0 ? KW : a.kw, kh = a.kh;
  const GeneralLayout L(kw, a.taps_per_chunk_rows);
  Px<C>* st = reinterpret_cast<Px<C>*>(smem4);
  float* taps = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(smem4) + L.taps_offset(sizeof(Px<C>)));
  int* sx = reinterpret_cast<int*>(taps + L.chunk * L.ts);

  const int bx = blockIdx.x * S::kBlockWidth, by = blockIdx.y * S::kGeneralRows;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int tx = lane & 3, pair = warp * 8 + (lane >> 2);
  const Raw<C, T> fill = fill_raw<C, T>(a.in.fill);
  const int col0 = a.origin_x + bx;
  const bool columns_shift = col0 >= a.in.x_lo && col0 + L.cols <= a.in.x_hi;
  // The column map only for blocks with a chunk off the fast path (every chunk's rows lie in
  // [origin_y + by, + 64 + kh - 1)); interior blocks skip it (9x9: about 45 instructions a thread).
  // Only where the lane stager runs: elsewhere the test cost registers (one-channel 9x9 80 -> 96)
  // or spills (u8 RGBA at KW 0: 24 -> 28 bytes).
  if (!kGeneralLanes<C, T, KW, MinBlocks> ||
      !GeneralStager<C, T, KW, MinBlocks>::shifts(a, columns_shift, a.origin_y + by, S::kGeneralRows + kh - 1))
    stage_columns(sx, L.cols, col0, a);

  Px<C> acc[2][kRun];
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int i = 0; i < kRun; ++i) acc[r][i] = splat<C>(0.0f);

  for (int ky0 = 0; ky0 < kh; ky0 += L.chunk) {
    const int kc = min(L.chunk, kh - ky0);
    __syncthreads();  // the previous chunk is done with st and taps (and sx is written)
    const int rows = S::kGeneralRows + kc - 1, row0 = a.origin_y + by + ky0;
    GeneralStager<C, T, KW, MinBlocks> stager(a);
    // Kernel rows ts floats apart, zero-padded: 16-byte aligned groups of 8 taps; staged while the
    // chunk's loads fly. One or two taps a thread for 9x9, not unrolled (the unrolled loop's set-up
    // cost it about 25 instructions a thread); eight for 31x31, which keeps the unrolling.
    auto stage_taps = [&] {
#pragma unroll(KW > 0 && KW < 2 * kRun ? 1 : 4)
      for (int i = threadIdx.x; i < kc * L.ts; i += S::kThreads) {
        const int r = i / L.ts, c = i - r * L.ts;
        taps[i] = c < kw ? __ldg(a.taps + static_cast<std::size_t>(ky0 + r) * kw + c) : 0.0f;
      }
    };
    if constexpr (kGeneralLanes<C, T, KW, MinBlocks>) {
      // One branch on the path (ChunkStagerOf::stage): else the lane stager's pixels stay live.
      stager.stage(st, L.sw, a, sx, rows, L.cols, row0, col0, columns_shift, fill, stage_taps);
    } else {
      stager.issue(a, sx, rows, L.cols, row0, col0, columns_shift, fill);
      stage_taps();
      stager.store(st, L.sw, a, sx, rows, L.cols, row0, fill);
    }
    __syncthreads();
    // Staged row 2*pair + q feeds output row 0 with kernel row q and output row 1 with row q - 1.
    constexpr bool kT4 = kGeneralTaps4<C, T>;
    const Px<C>* mine = st + 2 * pair * L.sw + 9 * tx;
    auto window = [](const Px<C>* src) { return [src](int k, int j) { return src[(k + (k >> 3)) + (j + (j >> 3))]; }; };
    if constexpr (KW > 0) {
      // Row 0 feeds output row 0 only, row kc output row 1 only, the loop over the rows between
      // both, with no branch on which (9x9: 49 instructions fewer a thread and chunk, 31x31 102).
      // The width-generic kernels keep one loop (peeled, the f32 RGBA one spills 120 bytes).
      slide_rows<C, 2, 0, 0, KW, kT4>(acc, kw, taps, L.ts, window(mine));
      if constexpr (MinBlocks == 2) {
        // Row and tap pointers stepped, not recomputed from threadIdx each row (31x31: 8
        // instructions fewer a staged row); at four blocks the 9x9 kernel has no registers for
        // them (it spills).
        const float* tq = taps + L.ts;
        const Px<C>* row = mine + L.sw;
        for (int q = 1; q < kc; ++q, row += L.sw, tq += L.ts)
          slide_rows<C, 2, 0, 1, KW, kT4>(acc, kw, tq, L.ts, window(row));
      } else {
        for (int q = 1; q < kc; ++q)
          slide_rows<C, 2, 0, 1, KW, kT4>(acc, kw, taps + q * L.ts, L.ts, window(mine + q * L.sw));
      }
      slide_rows<C, 2, 1, 1, KW, kT4>(acc, kw, taps + kc * L.ts, L.ts, window(mine + kc * L.sw));
    } else if constexpr (MinBlocks == 2) {
      const float* tq = taps;
      for (int q = 0; q <= kc; ++q, mine += L.sw, tq += L.ts)
        slide_pair<C, KW, kT4>(q == kc ? 1 : 0, q == 0 ? 0 : 1, acc, kw, tq, L.ts, window(mine));
    } else {
      for (int q = 0; q <= kc; ++q)
        slide_pair<C, KW, kT4>(q == kc ? 1 : 0, q == 0 ? 0 : 1, acc, kw, taps + q * L.ts, L.ts,
                               window(mine + q * L.sw));
    }
  }
  const int y = by + 2 * pair, x0 = bx + tx * kRun;
  emit_run<C, T>(a, x0, y, acc[0]);
  emit_run<C, T>(a, x0, y + 1, acc[1]);
}

}  // namespace tf::cuda::conv
