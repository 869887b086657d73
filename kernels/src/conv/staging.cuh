// Staging, per block: copies a chunk of input rows from global memory into shared memory as float
// pixels, through the border maps (Stager) or, away from the image edges where the maps are a plain
// shift, without them (AffineStager); ChunkStager picks one per chunk. Loads are issued into
// registers ahead of the stores, so they fly while the block computes. Device code only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>

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

  __device__ __forceinline__ explicit AffineStager(std::size_t /*pitch*/) {}
  __device__ __forceinline__ static bool takes(std::size_t /*pitch*/) { return true; }

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

// The separable kernel's fast path when its tap count is known at compile time and leaves at most
// 32 halo columns (Cols = 32 + kw - 1): every thread's pixels sit at fixed places in the chunk, so
// their offsets are computed once per kernel and each staged pixel costs a load, a 64-bit address
// add, its conversion and a store at an immediate offset (AffineStager's cursors and guards cost
// about as much again). Columns [0, 32) go one per lane, 4 rows apart per warp (rows warp + 4 i);
// the halo columns go 32 / E rows a warp (E = Cols - 32), lane l at row l / E, column 32 + l % E,
// 4 * (32 / E) rows apart; lanes past 32 / E rows repeat the first lanes' pixels (the same value to
// the same place), so they need no guard. Chunks have at most 32 rows; a full one needs no row
// guards when 4 * (32 / E) divides 32. The row-0 offsets are 32-bit: takes() refuses larger pitches.
template <int C, typename T, int Cols> struct LaneStager {
  static constexpr int kE = Cols - S::kBlockWidth;
  static constexpr int kSw = Cols | 1;  // SepLayout::sw
  static constexpr int kRows = S::kSepStepRows;
  static constexpr int kMain = kRows / 4;
  static constexpr int kHaloRowsPerWarp = kE > 0 ? 32 / kE : 1;
  static constexpr int kHaloStep = 4 * kHaloRowsPerWarp;  // rows between a thread's halo pixels
  static constexpr int kHalo = kE > 0 ? (kRows + kHaloStep - 1) / kHaloStep : 0;
  // The halo batches end at row 32: no guards in a full chunk.
  static constexpr bool kHaloExact = kHalo * kHaloStep == kRows;
  static_assert(kE >= 0 && kE <= 32 && S::kThreads == 128 && S::kBlockWidth == 32, "LaneStager's layout");
  static constexpr unsigned kPx = sizeof(T) * C;

  // u8 RGBA samples converted by the integer-to-float instructions, which the compiler spreads
  // over the conversion unit (I2F with a byte select) and the ALU (I2FP): 6 instructions a pixel
  // where to_px()'s byte permute and subtraction take 8. Both are exact.
  static constexpr bool kBytes = C == 4 && sizeof(T) == 1;
  using Held = Raw<C, T>;
  __device__ __forceinline__ static Held fetch(const unsigned char* p) { return load_raw<C, T>(p, 0); }
  __device__ __forceinline__ static Px<C> convert(const Held& h) {
    if constexpr (kBytes)
      return make_float4(__uint2float_rn(h.p & 0xFFu), __uint2float_rn(__byte_perm(h.p, 0, 0x4441)),
                         __uint2float_rn(__byte_perm(h.p, 0, 0x4442)), __uint2float_rn(h.p >> 24));
    else return to_px<C, T>(h);
  }

  Held main[kMain], halo[kHalo > 0 ? kHalo : 1];
  unsigned main_off = 0, halo_off = 0;  // bytes from the chunk's (row 0, column 0) to this thread's row-0 pixels
  int main_st = 0, halo_st = 0;         // their staged pixel indices
  int halo_row = 0;                     // this thread's first halo row
  const unsigned char *pm = nullptr, *ph = nullptr;

  __device__ __forceinline__ static bool takes(std::size_t pitch) { return pitch * kRows < (std::size_t(1) << 32); }

  __device__ __forceinline__ LaneStager(std::size_t pitch) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    main_off = static_cast<unsigned>(warp * pitch + lane * kPx);
    main_st = warp * kSw + lane;
    if constexpr (kE > 0) {
      const int l = lane % (kHaloRowsPerWarp * kE);
      const int hr = warp * kHaloRowsPerWarp + l / kE, hc = l % kE;
      halo_row = hr;
      halo_off = static_cast<unsigned>(hr * pitch + (S::kBlockWidth + hc) * kPx);
      halo_st = hr * kSw + S::kBlockWidth + hc;
    }
  }

  template <bool Full> __device__ __forceinline__ void load(int rows, std::size_t pitch) {
    const int warp = threadIdx.x >> 5;
#pragma unroll
    for (int i = 0; i < kMain; ++i)
      if (Full || warp + 4 * i < rows) main[i] = fetch(pm + 4 * i * pitch);
#pragma unroll
    for (int i = 0; i < kHalo; ++i)
      if ((Full && kHaloExact) || halo_row + kHaloStep * i < (Full ? kRows : rows))
        halo[i] = fetch(ph + kHaloStep * i * pitch);
  }

  template <bool Full> __device__ __forceinline__ void put(Px<C>* st, int rows) const {
    const int warp = threadIdx.x >> 5;
    Px<C>* m = st + main_st;
#pragma unroll
    for (int i = 0; i < kMain; ++i)
      if (Full || warp + 4 * i < rows) m[4 * i * kSw] = convert(main[i]);
    Px<C>* h = st + halo_st;
#pragma unroll
    for (int i = 0; i < kHalo; ++i)
      if ((Full && kHaloExact) || halo_row + kHaloStep * i < (Full ? kRows : rows))
        h[kHaloStep * i * kSw] = convert(halo[i]);
  }

  __device__ __forceinline__ void issue(int rows, int /*cols*/, const unsigned char* p0, std::size_t pitch) {
    pm = p0 + main_off;
    ph = p0 + halo_off;
    if (rows == kRows) load<true>(rows, pitch);
    else load<false>(rows, pitch);
  }

  __device__ __forceinline__ void store(Px<C>* st, int /*sw*/, int rows, int /*cols*/, const unsigned char* /*p0*/,
                                        std::size_t /*pitch*/) const {
    if (rows == kRows) put<true>(st, rows);
    else put<false>(st, rows);
  }
};

// Pixels a thread holds in one batch (GeneralLaneStager's kMain + kHalo), for 1 < kw <= 33.
constexpr int general_lane_pixels(int kw) {
  return (S::kGeneralRows + kw - 1 + 3) / 4 +
         (S::kGeneralRows + kw - 1 + 4 * (32 / (kw - 1)) - 1) / (4 * (32 / (kw - 1)));
}

// The 2-D kernel's fast path when its kernel width KW is known at compile time: as LaneStager,
// every thread's pixels sit at fixed places of the chunk (padded layout, GeneralLayout), so a
// staged pixel costs a load, a 64-bit address add, its conversion and a store at an immediate
// offset, all of a chunk's loads in flight at once (AffineStager's cursors, guards and batches cost
// about as much again: u8 RGBA 9x9 879 -> 488 instructions a thread and chunk). A batch is a chunk of
// KW kernel rows (Rows = 64 + KW - 1 staged rows): columns [0, 32) one per lane, rows warp + 4 i;
// the E = KW - 1 halo columns 32 / E rows a warp (lane l at row l / E, column 32 + l % E), rows
// kHaloStep apart; lanes past 32 / E rows repeat the first lanes' pixels (same value, same place).
// A batch that the chunk fills needs guards only on its last row group; taller chunks take more
// batches, shorter ones guard every row. Samples convert as LaneStager's. Row offsets are 32-bit:
// takes() refuses larger pitches.
template <int C, typename T, int KW> struct GeneralLaneStager {
  static constexpr int kCols = S::kBlockWidth + KW - 1;
  static constexpr int kE = kCols - S::kBlockWidth;
  static constexpr int kSw = GeneralLayout::row_stride(kCols);
  static constexpr int kRows = S::kGeneralRows + KW - 1;
  static constexpr int kMain = (kRows + 3) / 4;
  static constexpr int kHaloRowsPerWarp = kE > 0 ? 32 / kE : 1;
  static constexpr int kHaloStep = 4 * kHaloRowsPerWarp;
  static constexpr int kHalo = kE > 0 ? (kRows + kHaloStep - 1) / kHaloStep : 0;
  static_assert(kE >= 1 && kE <= 32 && S::kThreads == 128 && S::kBlockWidth == 32, "GeneralLaneStager's layout");
  static_assert(kMain + kHalo == general_lane_pixels(KW), "general_lane_pixels()");
  static constexpr unsigned kPx = sizeof(T) * C;
  using Held = Raw<C, T>;
  __device__ __forceinline__ static Held fetch(const unsigned char* p) { return load_raw<C, T>(p, 0); }
  __device__ __forceinline__ static Px<C> convert(const Held& h) { return LaneStager<C, T, kCols>::convert(h); }

  Held main[kMain], halo[kHalo > 0 ? kHalo : 1];

  __device__ __forceinline__ static bool takes(std::size_t pitch) {
    return pitch * (kRows + kHaloStep) < (std::size_t(1) << 32);
  }
  __device__ __forceinline__ explicit GeneralLaneStager(std::size_t /*pitch*/) {}

  // The thread's places, computed where used (t = threadIdx.x): main pixel i and halo pixel j of
  // the batch at row r0 are chunk rows r0 + warp + 4 i and r0 + halo_row(t) + kHaloStep j.
  __device__ __forceinline__ static int lane_halo(unsigned t) {
    return static_cast<int>(t & 31) % (kHaloRowsPerWarp * (kE > 0 ? kE : 1));
  }
  __device__ __forceinline__ static int halo_row(unsigned t) {
    return static_cast<int>(t >> 5) * kHaloRowsPerWarp + lane_halo(t) / kE;
  }
  __device__ __forceinline__ static int halo_col(unsigned t) { return S::kBlockWidth + lane_halo(t) % kE; }

  // Full: the batch's kRows rows are all in the chunk.
  template <bool Full> __device__ __forceinline__ static bool main_in(unsigned t, int r0, int rows, int i) {
    const int r = static_cast<int>(t >> 5) + 4 * i;
    return (4 * i + 3 < kRows || r < kRows) && (Full || r0 + r < rows);
  }
  template <bool Full> __device__ __forceinline__ static bool halo_in(unsigned t, int r0, int rows, int j) {
    const int r = halo_row(t) + kHaloStep * j;
    return (kHaloStep * (j + 1) <= kRows || r < kRows) && (Full || r0 + r < rows);
  }

  template <bool Full>
  __device__ __forceinline__ void load(int r0, int rows, const unsigned char* b, std::size_t pitch) {
    const unsigned t = threadIdx.x, p32 = static_cast<unsigned>(pitch), step = 4 * p32, hstep = step * kHaloRowsPerWarp;
    const unsigned char* pm = b + ((t >> 5) * p32 + (t & 31) * kPx);
#pragma unroll
    for (int i = 0; i < kMain; ++i)
      if (main_in<Full>(t, r0, rows, i)) main[i] = fetch(pm + static_cast<unsigned long long>(step) * i);
    if constexpr (kE > 0) {
      const unsigned char* ph = b + (halo_row(t) * p32 + halo_col(t) * kPx);
#pragma unroll
      for (int j = 0; j < kHalo; ++j)
        if (halo_in<Full>(t, r0, rows, j)) halo[j] = fetch(ph + static_cast<unsigned long long>(hstep) * j);
    }
  }

  template <bool Full> __device__ __forceinline__ void put(int r0, int rows, Px<C>* st) const {
    const unsigned t = threadIdx.x;
    Px<C>* m = st + (r0 + static_cast<int>(t >> 5)) * kSw + phys<true>(static_cast<int>(t & 31));
#pragma unroll
    for (int i = 0; i < kMain; ++i)
      if (main_in<Full>(t, r0, rows, i)) m[4 * i * kSw] = convert(main[i]);
    if constexpr (kE > 0) {
      Px<C>* h = st + (r0 + halo_row(t)) * kSw + phys<true>(halo_col(t));
#pragma unroll
      for (int j = 0; j < kHalo; ++j)
        if (halo_in<Full>(t, r0, rows, j)) h[kHaloStep * j * kSw] = convert(halo[j]);
    }
  }

  // Loads the batch at row r0.
  __device__ __forceinline__ void load_batch(int r0, int rows, const unsigned char* p0, std::size_t pitch) {
    const unsigned char* b = p0 + static_cast<std::size_t>(r0) * pitch;
    if (r0 + kRows <= rows) load<true>(r0, rows, b, pitch);
    else load<false>(r0, rows, b, pitch);
  }

  __device__ __forceinline__ void issue(int rows, int /*cols*/, const unsigned char* p0, std::size_t pitch) {
    load_batch(0, rows, p0, pitch);
  }

  __device__ __forceinline__ void store(Px<C>* st, int /*sw*/, int rows, int /*cols*/, const unsigned char* p0,
                                        std::size_t pitch) {
    for (int r0 = 0;; r0 += kRows) {
      if (r0 + kRows <= rows) put<true>(r0, rows, st);
      else put<false>(r0, rows, st);
      if (r0 + kRows >= rows) break;
      load_batch(r0 + kRows, rows, p0, pitch);
    }
  }
};

// Stages one chunk of rows by the fast path (Shifted: AffineStager or LaneStager) when the block's
// columns (`columns_shift`) and the chunk's rows map by a plain shift, else through the maps.
template <int C, typename T, bool Pad, int NB, class Shifted> struct ChunkStagerOf {
  Stager<C, T, Pad, NB> mapped;
  Shifted shifted;
  bool fast = false;
  const unsigned char* p0 = nullptr;

  __device__ __forceinline__ explicit ChunkStagerOf(const ConvArgs& a) : shifted(a.in.pitch) {}

  // Whether rows [row0, row0 + rows) take the fast path (and so never read the column map).
  __device__ __forceinline__ static bool shifts(const ConvArgs& a, bool columns_shift, int row0, int rows) {
    return columns_shift && row0 >= a.in.y_lo && row0 + rows <= a.in.y_hi && Shifted::takes(a.in.pitch);
  }

  __device__ __forceinline__ void issue(const ConvArgs& a, const int* sx, int rows, int cols, int row0, int col0,
                                        bool columns_shift, const Raw<C, T>& fill) {
    fast = shifts(a, columns_shift, row0, rows);
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
  // issue(), between() while the loads fly, store(), with one branch on the path: then the compiler
  // sees each path's pixels written before they are read, and keeps neither path's registers live
  // around the caller's loop (issue() and store() branch apart on `fast`; a path through one's fast
  // branch and the other's mapped one looks possible to it).
  template <class Between>
  __device__ __forceinline__ void stage(Px<C>* st, int sw, const ConvArgs& a, const int* sx, int rows, int cols,
                                        int row0, int col0, bool columns_shift, const Raw<C, T>& fill,
                                        Between between) {
    if (shifts(a, columns_shift, row0, rows)) {
      const unsigned char* p = static_cast<const unsigned char*>(a.in.data) +
                               static_cast<std::size_t>(row0 + a.in.y_shift) * a.in.pitch +
                               static_cast<std::size_t>(col0 + a.in.x_shift) * sizeof(T) * C;
      shifted.issue(rows, cols, p, a.in.pitch);
      between();
      shifted.store(st, sw, rows, cols, p, a.in.pitch);
    } else {
      mapped.issue(a, sx, rows, cols, row0, fill);
      between();
      mapped.store(st, sw, a, sx, rows, cols, row0, fill);
    }
  }
};

template <int C, typename T, bool Pad, int NB, int MainRegs, int HaloRegs, int MaxMain = 8, int MaxHalo = 64>
using ChunkStager = ChunkStagerOf<C, T, Pad, NB, AffineStager<C, T, Pad, MainRegs, HaloRegs, MaxMain, MaxHalo>>;

// The block's plane columns [col0, col0 + cols) mapped to buffer columns (-1: the fill value).
__device__ __forceinline__ void stage_columns(int* sx, int cols, int col0, const ConvArgs& a) {
  for (int c = threadIdx.x; c < cols; c += S::kThreads) {
    const int pc = col0 + c;
    sx[c] = pc < a.in.width ? __ldg(a.in.xmap + pc) : -1;
  }
}

}  // namespace tf::cuda::conv
