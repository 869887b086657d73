// Staging, per block: copies a chunk of input rows from global memory into shared memory as float
// pixels, through the border maps (Stager) or, away from the image edges where the maps are a plain
// shift, without them (AffineStager); ChunkStager picks one per chunk. Loads are issued into
// registers ahead of the stores, so they fly while the block computes. Device code only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "conv/block_layout.hpp"
#include "conv/pixel_io.cuh"
#include "conv_kernels.hpp"

namespace tf::cuda::conv {

// Column c of a staged row is stored at c, or at c + c/8 for the 2-D kernel's padded layout (which
// keeps 8 lanes of two rows and four runs on distinct banks).
template <bool Pad> __device__ __forceinline__ int phys(int c) { return Pad ? c + (c >> 3) : c; }

// Stages plane rows [row0, row0 + rows) x the block's `cols` columns (their buffer columns in `sx`,
// -1 = the fill value) into shared memory as float pixels. Element e = (row, col) in row-major
// order belongs to thread e mod 128 (coalesced loads); issue() starts the loads of a thread's first
// NB elements into registers (so they can fly while the block computes), store() converts and
// writes them, loading any further ones in batches of NB.
template <int C, typename T, bool Pad, int NB> struct Stager {
  Raw<C, T> raw[NB];

  struct Cursor {
    int r, c, dr, dc;
    __device__ __forceinline__ Cursor(int cols) {
      r = threadIdx.x / cols;
      c = threadIdx.x - r * cols;
      dr = S::kThreads / cols;
      dc = S::kThreads - dr * cols;
    }
    __device__ __forceinline__ void advance(int cols) {
      c += dc;
      r += dr;
      if (c >= cols) {
        c -= cols;
        ++r;
      }
    }
  };

  __device__ __forceinline__ static Raw<C, T> fetch(const ConvArgs& a, const int* sx, int rows, int row0,
                                                    const Cursor& at, const Raw<C, T>& fill) {
    Raw<C, T> v = fill;
    if (at.r < rows) {
      const int pr = row0 + at.r;
      const int by = pr < a.in.height ? __ldg(a.in.ymap + pr) : -1;
      const int bx = sx[at.c];
      if (by >= 0 && bx >= 0)
        v = load_raw<C, T>(static_cast<const unsigned char*>(a.in.data) + static_cast<std::size_t>(by) * a.in.pitch,
                           bx);
    }
    return v;
  }

  __device__ __forceinline__ void issue(const ConvArgs& a, const int* sx, int rows, int cols, int row0,
                                        const Raw<C, T>& fill) {
    Cursor at(cols);
#pragma unroll
    for (int i = 0; i < NB; ++i) {
      raw[i] = fetch(a, sx, rows, row0, at, fill);
      at.advance(cols);
    }
  }

  __device__ __forceinline__ void store(Px<C>* st, int sw, const ConvArgs& a, const int* sx, int rows, int cols,
                                        int row0, const Raw<C, T>& fill) {
    Cursor at(cols);
    const int per_thread = (rows * cols + S::kThreads - 1) / S::kThreads;  // the most elements a thread has
    for (int batch = 0;; batch += NB) {
#pragma unroll
      for (int i = 0; i < NB; ++i) {
        if (at.r < rows) st[at.r * sw + phys<Pad>(at.c)] = to_px<C, T>(raw[i]);
        at.advance(cols);
      }
      if (batch + NB >= per_thread) break;  // usually the first batch was all
      Cursor ahead = at;
#pragma unroll
      for (int i = 0; i < NB; ++i) {
        raw[i] = fetch(a, sx, rows, row0, ahead, fill);
        ahead.advance(cols);
      }
    }
  }
};

// Pixels of `Regs` registers' worth a thread keeps in flight while staging, at least 1, at most `Most`.
template <int C, typename T, int Regs, int Most>
constexpr int kPixelsInFlight = Regs / raw_regs<C, T>() >= Most
                                    ? Most
                                    : (Regs / raw_regs<C, T>() < 1 ? 1 : Regs / raw_regs<C, T>());

// The fast path of staging, for chunks whose rows and columns all map to the buffer by a plain
// shift (every block away from the image edges): no map lookups, no fill checks. Columns [0, 32)
// go one per lane, 4 rows apart per warp; the halo columns [32, cols) are spread over all threads.
// A batch that the chunk fills (every separable step after the first, the first batch of a 2-D
// chunk) runs without per-row guards, from one row pointer per thread stepped by 4 rows; whether
// another halo batch is needed is a block-uniform count, so it needs no barrier. MainRegs and
// HaloRegs are the registers for the main and the halo pixels in flight, at most MaxMain and MaxHalo.
template <int C, typename T, bool Pad, int MainRegs, int HaloRegs, int MaxMain = 8, int MaxHalo = 64>
struct AffineStager {
  static constexpr int kMain = kPixelsInFlight<C, T, MainRegs, MaxMain>;
  static constexpr int kHalo = kPixelsInFlight<C, T, HaloRegs, MaxHalo>;
  static constexpr int kRowsPerBatch = 4 * kMain;  // 4 warps
  Raw<C, T> main[kMain], halo[kHalo];

  struct HaloCursor {
    int r, c, dr, dc, extra;
    __device__ __forceinline__ HaloCursor(int cols, int first) : extra(cols - S::kBlockWidth) {
      r = first / extra;
      c = first - r * extra;
      dr = S::kThreads / extra;
      dc = S::kThreads - dr * extra;
    }
    __device__ __forceinline__ void advance() {
      c += dc;
      r += dr;
      if (c >= extra) {
        c -= extra;
        ++r;
      }
    }
  };

  // This thread's main-column pixel of chunk row `warp` (rows 4 apart follow at 4 * pitch).
  __device__ __forceinline__ static const unsigned char* lane_row(const unsigned char* p0, std::size_t pitch) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    return p0 + static_cast<std::size_t>(warp) * pitch + static_cast<std::size_t>(lane) * sizeof(T) * C;
  }

  __device__ __forceinline__ void load_main(int r0, int rows, const unsigned char* p, std::size_t pitch) {
    const int warp = threadIdx.x >> 5;
    const std::size_t step = 4 * pitch;
    p += static_cast<std::size_t>(r0) * pitch;
    if (r0 + kRowsPerBatch <= rows) {
#pragma unroll
      for (int i = 0; i < kMain; ++i, p += step) main[i] = load_raw<C, T>(p, 0);
    } else {
#pragma unroll
      for (int i = 0; i < kMain; ++i, p += step)
        if (r0 + warp + 4 * i < rows) main[i] = load_raw<C, T>(p, 0);
    }
  }

  __device__ __forceinline__ void store_main(int r0, int rows, Px<C>* st, int sw) const {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    Px<C>* d = st + (r0 + warp) * sw + phys<Pad>(lane);
    if (r0 + kRowsPerBatch <= rows) {
#pragma unroll
      for (int i = 0; i < kMain; ++i) d[4 * i * sw] = to_px<C, T>(main[i]);
    } else {
#pragma unroll
      for (int i = 0; i < kMain; ++i)
        if (r0 + warp + 4 * i < rows) d[4 * i * sw] = to_px<C, T>(main[i]);
    }
  }

  __device__ __forceinline__ void issue(int rows, int cols, const unsigned char* p0, std::size_t pitch) {
    load_main(0, rows, lane_row(p0, pitch), pitch);
    if (cols > S::kBlockWidth) {
      HaloCursor at(cols, threadIdx.x);
      const bool full = rows * at.extra >= S::kThreads * kHalo;
#pragma unroll
      for (int i = 0; i < kHalo; ++i) {
        if (full || at.r < rows)
          halo[i] = load_raw<C, T>(p0 + static_cast<std::size_t>(at.r) * pitch, S::kBlockWidth + at.c);
        at.advance();
      }
    }
  }

  __device__ __forceinline__ void store(Px<C>* st, int sw, int rows, int cols, const unsigned char* p0,
                                        std::size_t pitch) {
    store_main(0, rows, st, sw);
    if (rows > kRowsPerBatch) {  // rows beyond the first batch
      const unsigned char* p = lane_row(p0, pitch);
      for (int r0 = kRowsPerBatch; r0 < rows; r0 += kRowsPerBatch) {
        load_main(r0, rows, p, pitch);
        store_main(r0, rows, st, sw);
      }
    }
    if (cols > S::kBlockWidth) {
      HaloCursor at(cols, threadIdx.x);
      const int elements = rows * at.extra;
      for (int done = 0;; done += S::kThreads * kHalo) {
        const bool full = elements - done >= S::kThreads * kHalo;
#pragma unroll
        for (int i = 0; i < kHalo; ++i) {
          if (full || at.r < rows) st[at.r * sw + phys<Pad>(S::kBlockWidth + at.c)] = to_px<C, T>(halo[i]);
          at.advance();
        }
        if (done + S::kThreads * kHalo >= elements) break;  // block-uniform: no barrier needed
        HaloCursor ahead = at;
        const bool next_full = elements - done >= 2 * S::kThreads * kHalo;
#pragma unroll
        for (int i = 0; i < kHalo; ++i) {
          if (next_full || ahead.r < rows)
            halo[i] = load_raw<C, T>(p0 + static_cast<std::size_t>(ahead.r) * pitch, S::kBlockWidth + ahead.c);
          ahead.advance();
        }
      }
    }
  }
};

// Stages one chunk of rows by the fast path when the block's columns (`columns_shift`) and the
// chunk's rows map by a plain shift, else through the maps.
template <int C, typename T, bool Pad, int NB, int MainRegs, int HaloRegs, int MaxMain = 8, int MaxHalo = 64>
struct ChunkStager {
  Stager<C, T, Pad, NB> mapped;
  AffineStager<C, T, Pad, MainRegs, HaloRegs, MaxMain, MaxHalo> shifted;
  bool fast = false;
  const unsigned char* p0 = nullptr;

  __device__ __forceinline__ void issue(const ConvArgs& a, const int* sx, int rows, int cols, int row0, int col0,
                                        bool columns_shift, const Raw<C, T>& fill) {
    fast = columns_shift && row0 >= a.in.y_lo && row0 + rows <= a.in.y_hi;
    if (fast) {
      p0 = static_cast<const unsigned char*>(a.in.data) + static_cast<std::size_t>(row0 + a.in.y_shift) * a.in.pitch +
           static_cast<std::size_t>(col0 + a.in.x_shift) * sizeof(T) * C;
      shifted.issue(rows, cols, p0, a.in.pitch);
    } else {
      mapped.issue(a, sx, rows, cols, row0, fill);
    }
  }
  __device__ __forceinline__ void store(Px<C>* st, int sw, const ConvArgs& a, const int* sx, int rows, int cols,
                                        int row0, const Raw<C, T>& fill) {
    if (fast) shifted.store(st, sw, rows, cols, p0, a.in.pitch);
    else mapped.store(st, sw, a, sx, rows, cols, row0, fill);
  }
};

// The block's plane columns [col0, col0 + cols) mapped to buffer columns (-1: the fill value).
__device__ __forceinline__ void stage_columns(int* sx, int cols, int col0, const ConvArgs& a) {
  for (int c = threadIdx.x; c < cols; c += S::kThreads) {
    const int pc = col0 + c;
    sx[c] = pc < a.in.width ? __ldg(a.in.xmap + pc) : -1;
  }
}

}  // namespace tf::cuda::conv
