// Convolution kernels: a fused separable kernel (row pass into a shared-memory ring of float32 rows,
// column pass out of it, one block walking down a 32-pixel-wide column strip) and a general 2-D
// kernel (an input tile in shared memory, kernel rows staged in chunks so any size fits). Both read
// their input through the border maps of ConvArgs and quantize in their epilogue, so one launch
// does one whole convolution: global memory sees each input pixel about once and each output once.
//
// Registers: a thread owns 8 consecutive output pixels (a "run") and slides an 8-pixel window along
// the taps; the window is rotated by unrolling 8 steps, so every index is a compile-time constant
// and nothing goes to local memory. Each shared-memory load of a pixel feeds 32 (separable) or 64
// (2-D, two output rows) fused multiply-adds; taps are broadcast loads from shared memory.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "conv_kernels.hpp"
#include "tilefilter/error.hpp"

namespace tf::cuda {

namespace {

using S = KernelSchedule;
constexpr int R = S::run;

// A pixel in shared memory and registers: float for one channel, float4 for three (padded) or four.
template <int C> struct PxT { using type = float4; };
template <> struct PxT<1> { using type = float; };
template <int C> using Px = typename PxT<C>::type;

template <int C> __device__ __forceinline__ Px<C> splat(float v) {
  if constexpr (C == 1) return v;
  else return make_float4(v, v, v, C == 4 ? v : 0.0f);
}

// acc += v * t, per channel, as one fused multiply-add each (contract 2).
template <int C> __device__ __forceinline__ void fma_px(Px<C>& acc, const Px<C>& v, float t) {
  if constexpr (C == 1) {
    acc = fmaf(v, t, acc);
  } else {
    acc.x = fmaf(v.x, t, acc.x);
    acc.y = fmaf(v.y, t, acc.y);
    acc.z = fmaf(v.z, t, acc.z);
    if constexpr (C == 4) acc.w = fmaf(v.w, t, acc.w);
  }
}

template <int C> __device__ __forceinline__ float channel(const Px<C>& p, int c) {
  if constexpr (C == 1) return p;
  else return c == 0 ? p.x : c == 1 ? p.y : c == 2 ? p.z : p.w;
}

// Raw pixels as stored in a buffer, loaded with one vector access where alignment allows.
template <int C, typename T> struct Raw { T v[C]; };
template <> struct Raw<4, std::uint8_t> { unsigned int p; };
template <> struct Raw<4, std::uint16_t> { uint2 p; };
template <> struct Raw<4, float> { float4 p; };
// Registers one Raw takes (sizes the prefetch batches).
template <int C, typename T> constexpr int raw_regs() { return C == 4 ? static_cast<int>((sizeof(T) * 4 + 3) / 4) : C; }

template <int C, typename T>
__device__ __forceinline__ Raw<C, T> load_raw(const unsigned char* row, int x) {
  Raw<C, T> r;
  if constexpr (C == 4 && sizeof(T) == 1) r.p = __ldg(reinterpret_cast<const unsigned int*>(row) + x);
  else if constexpr (C == 4 && sizeof(T) == 2) r.p = __ldg(reinterpret_cast<const uint2*>(row) + x);
  else if constexpr (C == 4) r.p = __ldg(reinterpret_cast<const float4*>(row) + x);
  else {
    const T* p = reinterpret_cast<const T*>(row) + static_cast<std::size_t>(x) * C;
#pragma unroll
    for (int c = 0; c < C; ++c) r.v[c] = __ldg(p + c);
  }
  return r;
}

// The constant border value as a raw pixel (it is already quantized to the type, so exact).
template <int C, typename T> __device__ __forceinline__ Raw<C, T> fill_raw(float f) {
  Raw<C, T> r;
  if constexpr (C == 4 && sizeof(T) == 1) r.p = static_cast<unsigned int>(f) * 0x01010101u;
  else if constexpr (C == 4 && sizeof(T) == 2) {
    const unsigned int h = static_cast<unsigned int>(f);
    r.p = make_uint2(h | h << 16, h | h << 16);
  } else if constexpr (C == 4) r.p = make_float4(f, f, f, f);
  else
#pragma unroll
    for (int c = 0; c < C; ++c) r.v[c] = static_cast<T>(f);
  return r;
}

// Integer samples to float without the (quarter-rate) conversion unit: the sample's bits placed
// under the exponent of 2^23 give the float 2^23 + v exactly; subtracting 2^23 leaves v.
constexpr unsigned int kTwo23Bits = 0x4B000000u;
__device__ __forceinline__ float from_bits_2_23(unsigned int bits) { return __uint_as_float(bits) - 8388608.0f; }
template <int Byte> __device__ __forceinline__ float u8_at(unsigned int packed) {
  return from_bits_2_23(__byte_perm(packed, kTwo23Bits, 0x7540 | Byte));
}
template <int Half> __device__ __forceinline__ float u16_at(unsigned int packed) {
  return from_bits_2_23(__byte_perm(packed, kTwo23Bits, Half ? 0x7432 : 0x7410));
}
template <typename T> __device__ __forceinline__ float sample_to_float(T v) {
  if constexpr (sizeof(T) == 4) return v;
  else return from_bits_2_23(kTwo23Bits | static_cast<unsigned int>(v));
}

template <int C, typename T> __device__ __forceinline__ Px<C> to_px(const Raw<C, T>& r) {
  if constexpr (C == 4 && sizeof(T) == 1) return make_float4(u8_at<0>(r.p), u8_at<1>(r.p), u8_at<2>(r.p), u8_at<3>(r.p));
  else if constexpr (C == 4 && sizeof(T) == 2)
    return make_float4(u16_at<0>(r.p.x), u16_at<1>(r.p.x), u16_at<0>(r.p.y), u16_at<1>(r.p.y));
  else if constexpr (C == 4) return r.p;
  else if constexpr (C == 1) return sample_to_float(r.v[0]);
  else return make_float4(sample_to_float(r.v[0]), sample_to_float(r.v[1]), sample_to_float(r.v[2]), 0.0f);
}

// Quantization of an integer output: core's std::min(std::max(std::rint(v), 0), hi), computed as
// clamp then round (the same value for every v: rounding cannot cross 0 or hi the other way) and
// rounded by adding 1.5 * 2^23, whose ulp is 1, so the add rounds to nearest-even. The result's low
// 16 bits are the integer. Full-rate instructions only (rintf and float->int are quarter-rate).
template <typename T> __device__ __forceinline__ unsigned int quantized_bits(float v) {
  constexpr float hi = sizeof(T) == 1 ? 255.0f : 65535.0f;
  const float q = fminf(fmaxf(v, 0.0f), hi);
  return __float_as_uint(q + 12582912.0f);
}

// One output pixel, packed as stored.
template <int C, typename T> struct Out { T v[C]; };
template <> struct Out<4, std::uint8_t> { unsigned int p; };
template <> struct Out<4, std::uint16_t> { uint2 p; };
template <> struct Out<4, float> { float4 p; };

template <int C, typename T> __device__ __forceinline__ Out<C, T> pack(const float (&o)[C]) {
  Out<C, T> r;
  if constexpr (C == 4 && sizeof(T) == 1) {
    const unsigned int t0 = quantized_bits<T>(o[0]), t1 = quantized_bits<T>(o[1]), t2 = quantized_bits<T>(o[2]),
                       t3 = quantized_bits<T>(o[3]);
    r.p = __byte_perm(__byte_perm(t0, t1, 0x0040), __byte_perm(t2, t3, 0x0040), 0x5410);
  } else if constexpr (C == 4 && sizeof(T) == 2) {
    r.p = make_uint2(__byte_perm(quantized_bits<T>(o[0]), quantized_bits<T>(o[1]), 0x5410),
                     __byte_perm(quantized_bits<T>(o[2]), quantized_bits<T>(o[3]), 0x5410));
  } else if constexpr (C == 4) {
    r.p = make_float4(o[0], o[1], o[2], o[3]);
  } else {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if constexpr (sizeof(T) == 4) r.v[c] = o[c];
      else r.v[c] = static_cast<T>(quantized_bits<T>(o[c]) & (sizeof(T) == 1 ? 0xFFu : 0xFFFFu));
    }
  }
  return r;
}

template <int C, typename T> __device__ __forceinline__ T* out_at(const ConvArgs& a, int x, int y) {
  return reinterpret_cast<T*>(static_cast<unsigned char*>(a.out) + static_cast<std::size_t>(y) * a.out_pitch) +
         static_cast<std::size_t>(x) * C;
}
template <int C> __device__ __forceinline__ float* scratch_at(const ConvArgs& a, int x, int y) {
  return reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(a.scratch) + static_cast<std::size_t>(y) * a.scratch_pitch) +
         static_cast<std::size_t>(x) * C;
}

template <int C, typename T> __device__ __forceinline__ void put(T* d, const Out<C, T>& p) {
  if constexpr (C == 4 && sizeof(T) == 1) *reinterpret_cast<unsigned int*>(d) = p.p;
  else if constexpr (C == 4 && sizeof(T) == 2) *reinterpret_cast<uint2*>(d) = p.p;
  else if constexpr (C == 4) *reinterpret_cast<float4*>(d) = p.p;
  else
#pragma unroll
    for (int c = 0; c < C; ++c) d[c] = p.v[c];
}

// The epilogue of one output pixel (see Epilogue).
template <int C, typename T>
__device__ __forceinline__ void emit(const ConvArgs& a, int x, int y, const Px<C>& v) {
  float o[C];
#pragma unroll
  for (int c = 0; c < C; ++c) o[c] = channel<C>(v, c);
  if (a.epilogue == Epilogue::StoreFloat) {
    float* s = scratch_at<C>(a, x, y);
    if constexpr (C == 4) *reinterpret_cast<float4*>(s) = v;
    else
#pragma unroll
      for (int c = 0; c < C; ++c) s[c] = o[c];
    return;
  }
  if (a.epilogue == Epilogue::Magnitude) {
    const float* s = scratch_at<C>(a, x, y);
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const float first = s[c];
      o[c] = sqrtf(fmaf(first, first, __fmul_rn(o[c], o[c])));
    }
  }
  put<C, T>(out_at<C, T>(a, x, y), pack<C, T>(o));
}

template <int C> __device__ __forceinline__ void channels(const Px<C>& v, float (&o)[C]) {
#pragma unroll
  for (int c = 0; c < C; ++c) o[c] = channel<C>(v, c);
}

// R pixels of one column, rows y0.. (those below y_end): one address computation for all of them.
template <int C, typename T>
__device__ __forceinline__ void emit_column(const ConvArgs& a, int x, int y0, int y_end, const Px<C> (&v)[R]) {
  if (a.epilogue == Epilogue::Store) {
    unsigned char* row = reinterpret_cast<unsigned char*>(out_at<C, T>(a, x, y0));
#pragma unroll
    for (int j = 0; j < R; ++j) {
      if (y0 + j < y_end) {
        float o[C];
        channels<C>(v[j], o);
        put<C, T>(reinterpret_cast<T*>(row), pack<C, T>(o));
      }
      row += a.out_pitch;
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < R; ++j)
    if (y0 + j < y_end) emit<C, T>(a, x, y0 + j, v[j]);
}

// A run of R pixels of one row starting at x0: 16-byte stores when the whole run is inside.
template <int C, typename T>
__device__ __forceinline__ void emit_run(const ConvArgs& a, int x0, int y, const Px<C> (&v)[R]) {
  if (y >= a.height) return;
  if constexpr (C == 4 && sizeof(T) <= 2) {
    if (a.epilogue == Epilogue::Store && x0 + R <= a.width) {
      Out<C, T> p[R];
#pragma unroll
      for (int i = 0; i < R; ++i) {
        const float o[4] = {v[i].x, v[i].y, v[i].z, v[i].w};
        p[i] = pack<C, T>(o);
      }
      uint4* d = reinterpret_cast<uint4*>(out_at<C, T>(a, x0, y));
      if constexpr (sizeof(T) == 1) {
#pragma unroll
        for (int q = 0; q < R / 4; ++q) d[q] = make_uint4(p[4 * q].p, p[4 * q + 1].p, p[4 * q + 2].p, p[4 * q + 3].p);
      } else {
#pragma unroll
        for (int q = 0; q < R / 2; ++q) d[q] = make_uint4(p[2 * q].p.x, p[2 * q].p.y, p[2 * q + 1].p.x, p[2 * q + 1].p.y);
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < R; ++i)
    if (x0 + i < a.width) emit<C, T>(a, x0 + i, y, v[i]);
}

// Column c of a staged row is stored at c, or at c + c/8 for the 2-D kernel's padded layout (which
// keeps 8 lanes of two rows and four runs on distinct banks).
template <bool Pad> __device__ __forceinline__ int phys(int c) { return Pad ? c + (c >> 3) : c; }

// Stages plane rows [row0, row0 + rows) x the block's `cols` columns (their buffer columns in `sx`,
// -1 = the fill value) into shared memory as float pixels. Element e = (row, col) in row-major
// order belongs to thread e mod 128 (coalesced loads); issue() starts the loads of a thread's first
// NB elements into registers (so they can fly while the block computes), store() converts and
// writes them, loading any further ones in batches of NB.
template <int C, typename T, bool Pad, int NB>
struct Stager {
  Raw<C, T> raw[NB];

  struct Cursor {
    int r, c, dr, dc;
    __device__ __forceinline__ Cursor(int cols) {
      r = threadIdx.x / cols;
      c = threadIdx.x - r * cols;
      dr = S::threads / cols;
      dc = S::threads - dr * cols;
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

  __device__ __forceinline__ static Raw<C, T> fetch(const ConvArgs& a, const int* sx, int rows, int row0, const Cursor& at,
                                                    const Raw<C, T>& fill) {
    Raw<C, T> v = fill;
    if (at.r < rows) {
      const int pr = row0 + at.r;
      const int by = pr < a.in.height ? __ldg(a.in.ymap + pr) : -1;
      const int bx = sx[at.c];
      if (by >= 0 && bx >= 0)
        v = load_raw<C, T>(static_cast<const unsigned char*>(a.in.data) + static_cast<std::size_t>(by) * a.in.pitch, bx);
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

  __device__ __forceinline__ void store(Px<C>* st, int sw, const ConvArgs& a, const int* sx, int rows, int cols, int row0,
                                        const Raw<C, T>& fill) {
    Cursor at(cols);
    const int per_thread = (rows * cols + S::threads - 1) / S::threads;  // the most elements a thread has
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

// The fast path of staging, for chunks whose rows and columns all map to the buffer by a plain
// shift (every block away from the image edges): no map lookups, no fill checks. Columns [0, 32)
// go one per lane, 4 rows apart per warp; the halo columns [32, cols) are spread over all threads.
template <int C, typename T, bool Pad, int MainRegs, int HaloRegs>
struct AffineStager {
  static constexpr int kMain = MainRegs / raw_regs<C, T>() >= 8 ? 8 : (MainRegs / raw_regs<C, T>() < 1 ? 1 : MainRegs / raw_regs<C, T>());
  static constexpr int kHalo = HaloRegs / raw_regs<C, T>() < 1 ? 1 : HaloRegs / raw_regs<C, T>();
  Raw<C, T> main[kMain], halo[kHalo];

  struct HaloCursor {
    int r, c, dr, dc, extra;
    __device__ __forceinline__ HaloCursor(int cols, int first) : extra(cols - S::block_width) {
      r = first / extra;
      c = first - r * extra;
      dr = S::threads / extra;
      dc = S::threads - dr * extra;
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

  __device__ __forceinline__ void issue(int rows, int cols, const unsigned char* p0, std::size_t pitch) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int i = 0; i < kMain; ++i) {
      const int r = warp + 4 * i;
      if (r < rows) main[i] = load_raw<C, T>(p0 + static_cast<std::size_t>(r) * pitch, lane);
    }
    if (cols > S::block_width) {
      HaloCursor at(cols, threadIdx.x);
#pragma unroll
      for (int i = 0; i < kHalo; ++i) {
        if (at.r < rows) halo[i] = load_raw<C, T>(p0 + static_cast<std::size_t>(at.r) * pitch, S::block_width + at.c);
        at.advance();
      }
    }
  }

  __device__ __forceinline__ void store(Px<C>* st, int sw, int rows, int cols, const unsigned char* p0, std::size_t pitch) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int i = 0; i < kMain; ++i) {
      const int r = warp + 4 * i;
      if (r < rows) st[r * sw + phys<Pad>(lane)] = to_px<C, T>(main[i]);
    }
    for (int r0 = warp + 4 * kMain; r0 < rows; r0 += 4 * kMain) {  // rows beyond the first batch
#pragma unroll
      for (int i = 0; i < kMain; ++i) {
        const int r = r0 + 4 * i;
        if (r < rows) main[i] = load_raw<C, T>(p0 + static_cast<std::size_t>(r) * pitch, lane);
      }
#pragma unroll
      for (int i = 0; i < kMain; ++i) {
        const int r = r0 + 4 * i;
        if (r < rows) st[r * sw + phys<Pad>(lane)] = to_px<C, T>(main[i]);
      }
    }
    if (cols > S::block_width) {
      HaloCursor at(cols, threadIdx.x);
      for (;;) {
#pragma unroll
        for (int i = 0; i < kHalo; ++i) {
          if (at.r < rows) st[at.r * sw + phys<Pad>(S::block_width + at.c)] = to_px<C, T>(halo[i]);
          at.advance();
        }
        if (__syncthreads_or(at.r < rows) == 0) break;  // uniform; wide kernels need more batches
        HaloCursor ahead = at;
#pragma unroll
        for (int i = 0; i < kHalo; ++i) {
          if (ahead.r < rows) halo[i] = load_raw<C, T>(p0 + static_cast<std::size_t>(ahead.r) * pitch, S::block_width + ahead.c);
          ahead.advance();
        }
      }
    }
  }
};

template <int C, typename T> constexpr int kSepBatch = 12 / raw_regs<C, T>() < 1 ? 1 : 12 / raw_regs<C, T>();
template <int C, typename T> constexpr int kGeneralBatch = 6 / raw_regs<C, T>() < 1 ? 1 : 6 / raw_regs<C, T>();

// Stages one chunk of rows by the fast path when the block's columns (`columns_shift`) and the
// chunk's rows map by a plain shift, else through the maps.
template <int C, typename T, bool Pad, int NB, int MainRegs, int HaloRegs>
struct ChunkStager {
  Stager<C, T, Pad, NB> mapped;
  AffineStager<C, T, Pad, MainRegs, HaloRegs> shifted;
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
  __device__ __forceinline__ void store(Px<C>* st, int sw, const ConvArgs& a, const int* sx, int rows, int cols, int row0,
                                        const Raw<C, T>& fill) {
    if (fast) shifted.store(st, sw, rows, cols, p0, a.in.pitch);
    else mapped.store(st, sw, a, sx, rows, cols, row0, fill);
  }
};

// The block's plane columns [col0, col0 + cols) mapped to buffer columns (-1: the fill value).
__device__ __forceinline__ void stage_columns(int* sx, int cols, int col0, const ConvArgs& a) {
  for (int c = threadIdx.x; c < cols; c += S::threads) {
    const int pc = col0 + c;
    sx[c] = pc < a.in.width ? __ldg(a.in.xmap + pc) : -1;
  }
}

// The sliding window: for i < R, acc0[i] += sum_k w(k + i) * t0[k] (and acc1 with t1), k = 0..K-1 in
// order. load(k, j) returns window element k + j for k a multiple of R and j < 2R - 1 (compile-time).
template <int C, bool Use0, bool Use1, class Load>
__device__ __forceinline__ void slide(Px<C> (&acc0)[R], Px<C> (&acc1)[R], int K, const float* t0, const float* t1,
                                      Load load) {
  Px<C> w[R];
#pragma unroll
  for (int j = 0; j < R - 1; ++j) w[j] = load(0, j);
  // Tap k + u: window element k + u + R - 1 enters the register ring, then every output takes its FMA.
  auto tap = [&](int k, int u) {
    w[(u + R - 1) % R] = load(k, u + R - 1);
    if (Use0) {
      const float t = t0[k + u];
#pragma unroll
      for (int i = 0; i < R; ++i) fma_px<C>(acc0[i], w[(u + i) % R], t);
    }
    if (Use1) {
      const float t = t1[k + u];
#pragma unroll
      for (int i = 0; i < R; ++i) fma_px<C>(acc1[i], w[(u + i) % R], t);
    }
  };
  int k = 0;
  for (; k + R <= K; k += R) {
#pragma unroll
    for (int u = 0; u < R; ++u) tap(k, u);
  }
  if (k < K) {
#pragma unroll
    for (int u = 0; u < R; ++u)
      if (k + u < K) tap(k, u);
  }
}

struct SepLayout {
  int cols, sw, rb, stage_rows;
  static constexpr int ring_stride = S::block_width + 1;  // odd: row-pass stores of 8 rows hit distinct banks
  static constexpr int mirror = R;                         // ring rows [0, 8) are also kept at [rb, rb + 8)
  __host__ __device__ SepLayout(int kw, int kh, int stage)
      : cols(S::block_width + kw - 1), sw(cols | 1), rb((S::sep_step_rows + kh - 1 + R - 1) / R * R), stage_rows(stage) {}
  __host__ __device__ std::size_t bytes(std::size_t px, int kw, int kh) const {
    return (static_cast<std::size_t>(stage_rows) * sw + static_cast<std::size_t>(rb + mirror) * ring_stride) * px +
           static_cast<std::size_t>(kw + kh + cols) * 4 + 16;
  }
};

// Separable convolution. Block (bx, seg) computes region columns [32 bx, 32 bx + 32) of rows
// [seg * rows_per_block, ...). Staged input rows go through the row pass into a ring of float32
// rows (tmp row g <-> plane row origin_y + g, ring slot g mod rb), and each 32-row step's column
// pass reads the ring. The ring size is a multiple of 8 and its first 8 rows are mirrored past its
// end, so a column-pass window (8-row aligned groups of up to 15 rows) never wraps: every load is
// a fixed offset from one base per 8 taps. The next chunk's global loads are issued before the
// current chunk's row and column passes, so their latency hides behind this block's own work.
template <int C, typename T>
__global__ void __launch_bounds__(S::threads, 4) separable_kernel(const ConvArgs a, int stage_rows) {
  extern __shared__ float4 smem4[];
  const int kw = a.kw, kh = a.kh;
  const SepLayout L(kw, kh, stage_rows);
  Px<C>* st = reinterpret_cast<Px<C>*>(smem4);
  Px<C>* ring = st + static_cast<std::size_t>(L.stage_rows) * L.sw;
  float* taps = reinterpret_cast<float*>(ring + static_cast<std::size_t>(L.rb + SepLayout::mirror) * SepLayout::ring_stride);
  int* sx = reinterpret_cast<int*>(taps + kw + kh);

  const int bx = blockIdx.x * S::block_width;
  const int y_begin = blockIdx.y * a.rows_per_block;
  const int y_end = min(a.height, y_begin + a.rows_per_block);
  for (int i = threadIdx.x; i < kw + kh; i += S::threads) taps[i] = __ldg(a.taps + i);
  stage_columns(sx, L.cols, a.origin_x + bx, a);
  const Raw<C, T> fill = fill_raw<C, T>(a.in.fill);
  __syncthreads();

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rp_row = warp * 8 + (lane & 7), rp_x = (lane >> 3) * R;  // row pass: 8 rows a warp, 4 runs a row
  // Output step y needs tmp rows up to need(y); chunks of at most stage_rows rows fill them in order.
  auto need = [&](int y) { return min(y + S::sep_step_rows, y_end) + kh - 1; };
  const int col0 = a.origin_x + bx;
  const bool columns_shift = col0 >= a.in.x_lo && col0 + L.cols <= a.in.x_hi;
  ChunkStager<C, T, false, kSepBatch<C, T>, 16, 8> stager;
  int y = y_begin, next = y_begin;
  int n = min(L.stage_rows, need(y) - next);
  stager.issue(a, sx, n, L.cols, a.origin_y + next, col0, columns_shift, fill);
  for (;;) {
    stager.store(st, L.sw, a, sx, n, L.cols, a.origin_y + next, fill);
    __syncthreads();
    // Prefetch the following chunk (for this step, or the next one when this chunk completes it).
    const int after = next + n;
    const int fy = after >= need(y) ? y + S::sep_step_rows : y;
    int fn = 0;
    if (fy < y_end) {
      fn = min(L.stage_rows, need(fy) - after);
      stager.issue(a, sx, fn, L.cols, a.origin_y + after, col0, columns_shift, fill);
    }
    if (rp_row < n) {
      Px<C> acc[R];
#pragma unroll
      for (int i = 0; i < R; ++i) acc[i] = splat<C>(0.0f);
      const Px<C>* src = st + rp_row * L.sw + rp_x;
      slide<C, true, false>(acc, acc, kw, taps, taps, [src](int k, int j) { return src[k + j]; });
      const int slot = (next + rp_row) % L.rb;
      Px<C>* dst = ring + slot * SepLayout::ring_stride + rp_x;
#pragma unroll
      for (int i = 0; i < R; ++i) dst[i] = acc[i];
      if (slot < SepLayout::mirror) {
        Px<C>* copy = dst + L.rb * SepLayout::ring_stride;
#pragma unroll
        for (int i = 0; i < R; ++i) copy[i] = acc[i];
      }
    }
    __syncthreads();
    next = after;
    if (next >= need(y)) {
      // Column pass: warp w computes rows y + 8w .. y + 8w + 7 at column `lane`.
      const int y0 = y + warp * R;
      if (y0 < y_end) {
        Px<C> acc[R];
#pragma unroll
        for (int i = 0; i < R; ++i) acc[i] = splat<C>(0.0f);
        const int rb = L.rb, s0 = y0 % rb;  // a multiple of 8, as y0 and rb are
        const Px<C>* col = ring + lane;
        slide<C, true, false>(acc, acc, kh, taps + kw, taps + kw, [col, s0, rb](int k, int j) {
          int b = s0 + k;  // k < kh + 8 <= rb + 8: one wrap at most, and b stays a multiple of 8
          b = b >= rb ? b - rb : b;
          return col[(b + j) * SepLayout::ring_stride];
        });
        const int x = bx + lane;
        if (x < a.width) emit_column<C, T>(a, x, y0, y_end, acc);
      }
      y += S::sep_step_rows;
      if (y >= y_end) break;
    }
    n = fn;
  }
}

struct GeneralLayout {
  int cols, sw, chunk;
  __host__ __device__ GeneralLayout(int kw, int chunk_rows) : cols(S::block_width + kw - 1), chunk(chunk_rows) {
    const int p = cols + (cols >> 3) + 1;
    sw = p + ((2 - (p & 3)) & 3);  // == 2 (mod 4): the two rows of a thread pair land 4 banks apart
  }
  __host__ __device__ int rows() const { return S::general_rows + chunk - 1; }
  __host__ __device__ std::size_t bytes(std::size_t px, int kw) const {
    return static_cast<std::size_t>(rows()) * sw * px + static_cast<std::size_t>(chunk) * kw * 4 + static_cast<std::size_t>(cols) * 4 + 16;
  }
};

// General 2-D convolution. Block (bx, by) computes region columns [32 bx, +32) x rows [64 by, +64);
// a thread computes a run of 8 pixels in two adjacent rows. Kernel rows are taken in chunks of
// `chunk` (all of them when they fit), so accumulators carry over between chunks in order.
template <int C, typename T>
__global__ void __launch_bounds__(S::threads, 4) general_kernel(const ConvArgs a) {
  extern __shared__ float4 smem4[];
  const int kw = a.kw, kh = a.kh;
  const GeneralLayout L(kw, a.taps_per_chunk_rows);
  Px<C>* st = reinterpret_cast<Px<C>*>(smem4);
  float* taps = reinterpret_cast<float*>(st + static_cast<std::size_t>(L.rows()) * L.sw);
  int* sx = reinterpret_cast<int*>(taps + L.chunk * kw);

  const int bx = blockIdx.x * S::block_width, by = blockIdx.y * S::general_rows;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int tx = lane & 3, pair = warp * 8 + (lane >> 2);
  stage_columns(sx, L.cols, a.origin_x + bx, a);
  const Raw<C, T> fill = fill_raw<C, T>(a.in.fill);
  const int col0 = a.origin_x + bx;
  const bool columns_shift = col0 >= a.in.x_lo && col0 + L.cols <= a.in.x_hi;

  Px<C> acc0[R], acc1[R];
#pragma unroll
  for (int i = 0; i < R; ++i) acc0[i] = acc1[i] = splat<C>(0.0f);

  for (int ky0 = 0; ky0 < kh; ky0 += L.chunk) {
    const int kc = min(L.chunk, kh - ky0);
    __syncthreads();  // the previous chunk is done with st and taps (and sx is written)
    const int rows = S::general_rows + kc - 1, row0 = a.origin_y + by + ky0;
    ChunkStager<C, T, true, kGeneralBatch<C, T>, 8, 4> stager;
    stager.issue(a, sx, rows, L.cols, row0, col0, columns_shift, fill);
    for (int i = threadIdx.x; i < kc * kw; i += S::threads) taps[i] = __ldg(a.taps + static_cast<std::size_t>(ky0) * kw + i);
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
  const int y = by + 2 * pair, x0 = bx + tx * R;
  emit_run<C, T>(a, x0, y, acc0);
  emit_run<C, T>(a, x0, y + 1, acc1);
}

// The launch error, in TF_CUDA_CHECK's words ("EXPR at FILE:LINE: message").
void check_launch(const char* what, int line) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(ErrorKind::Device, std::string(what) + " at " + __FILE__ + ":" + std::to_string(line) + ": " +
                                       cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")");
}

void set_shared(const void* kernel, std::size_t bytes) {
  if (bytes <= 48 * 1024) return;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e != cudaSuccess)
    throw Error(ErrorKind::Device, std::string("cudaFuncSetAttribute(MaxDynamicSharedMemorySize) at ") + __FILE__ + ": " +
                                       cudaGetErrorString(e));
}

int resident_blocks(std::size_t smem) {
  // Shared memory bounds residency; registers allow 4 blocks of 128 threads at <= 128 registers.
  const int by_smem = static_cast<int>((228 * 1024) / (smem + 1024));
  return by_smem < 1 ? 1 : by_smem > 4 ? 4 : by_smem;
}

template <int C, typename T>
void launch_separable_t(ConvArgs a, int multiprocessors, cudaStream_t stream) {
  constexpr std::size_t px = sizeof(Px<C>);
  int stage = S::sep_step_rows;
  std::size_t smem = SepLayout(a.kw, a.kh, stage).bytes(px, a.kw, a.kh);
  while (smem > S::shared_limit && stage > 8) {
    stage /= 2;
    smem = SepLayout(a.kw, a.kh, stage).bytes(px, a.kw, a.kh);
  }
  if (smem > S::shared_limit)
    throw Error(ErrorKind::Limit, "separable kernel " + std::to_string(a.kw) + "x" + std::to_string(a.kh) + " needs " +
                                      std::to_string(smem) + " bytes of shared memory");
  const int blocks_x = (a.width + S::block_width - 1) / S::block_width;
  // Enough blocks for two waves, but long column strips: each strip recomputes kh - 1 ring rows.
  const long long target = 2LL * (multiprocessors > 0 ? multiprocessors : 132) * resident_blocks(smem);
  const long long segs = (target + blocks_x - 1) / blocks_x;
  int rows = static_cast<int>((a.height + segs - 1) / segs);
  rows = rows < 2 * a.kh ? 2 * a.kh : rows;
  rows = (rows + S::sep_step_rows - 1) / S::sep_step_rows * S::sep_step_rows;
  a.rows_per_block = rows;
  const dim3 grid(blocks_x, (a.height + rows - 1) / rows);
  auto* kernel = &separable_kernel<C, T>;
  set_shared(reinterpret_cast<const void*>(kernel), smem);
  kernel<<<grid, S::threads, smem, stream>>>(a, stage);
  check_launch("separable_kernel<<<>>>", __LINE__);
}

template <int C, typename T>
void launch_general_t(ConvArgs a, cudaStream_t stream) {
  constexpr std::size_t px = sizeof(Px<C>);
  // The most kernel rows that leave room for two blocks per SM; when that is fewer than 16 (wide
  // kernels), one block per SM with as many rows as fit: re-staging 63 rows per chunk costs more
  // than the lost occupancy (each step has 64 independent FMAs to hide latency with).
  auto bytes = [&](int c) { return GeneralLayout(a.kw, c).bytes(px, a.kw); };
  auto most_rows = [&](std::size_t limit) {
    int c = a.kh;
    while (c > 1 && bytes(c) > limit) --c;
    return c;
  };
  int chunk = most_rows(S::shared_limit / 2 - 1024);
  if (chunk < std::min(a.kh, 16)) chunk = most_rows(S::shared_limit);
  const std::size_t smem = bytes(chunk);
  if (smem > S::shared_limit)
    throw Error(ErrorKind::Limit, "2-D kernel " + std::to_string(a.kw) + "x" + std::to_string(a.kh) + " needs " +
                                      std::to_string(smem) + " bytes of shared memory");
  a.taps_per_chunk_rows = chunk;
  const dim3 grid((a.width + S::block_width - 1) / S::block_width, (a.height + S::general_rows - 1) / S::general_rows);
  auto* kernel = &general_kernel<C, T>;
  set_shared(reinterpret_cast<const void*>(kernel), smem);
  kernel<<<grid, S::threads, smem, stream>>>(a);
  check_launch("general_kernel<<<>>>", __LINE__);
}

template <template <int, typename> class F, class... Args>
void dispatch(SampleType type, int channels, Args&&... args) {
  auto by_type = [&](auto tag) {
    using T = decltype(tag);
    switch (channels) {
      case 1: F<1, T>::run(args...); return;
      case 3: F<3, T>::run(args...); return;
      case 4: F<4, T>::run(args...); return;
    }
    throw Error(ErrorKind::InvalidArgument, "unsupported channel count " + std::to_string(channels));
  };
  switch (type) {
    case SampleType::U8: by_type(std::uint8_t{}); return;
    case SampleType::U16: by_type(std::uint16_t{}); return;
    case SampleType::F32: by_type(float{}); return;
  }
}

template <int C, typename T> struct SepRun {
  static void run(const ConvArgs& a, int sms, cudaStream_t s) { launch_separable_t<C, T>(a, sms, s); }
};
template <int C, typename T> struct GenRun {
  static void run(const ConvArgs& a, cudaStream_t s) { launch_general_t<C, T>(a, s); }
};

}  // namespace

bool kernels_supported(std::string* why) {
  cudaFuncAttributes attributes{};
  const cudaError_t e = cudaFuncGetAttributes(&attributes, separable_kernel<4, std::uint8_t>);
  if (e == cudaSuccess) return true;
  (void)cudaGetLastError();
  if (why) *why = std::string("cannot run this build's kernels: ") + cudaGetErrorString(e);
  return false;
}

void launch_separable(SampleType type, int channels, const ConvArgs& args, int multiprocessors, cudaStream_t stream) {
  if (args.width <= 0 || args.height <= 0) return;
  dispatch<SepRun>(type, channels, args, multiprocessors, stream);
}

void launch_general(SampleType type, int channels, const ConvArgs& args, cudaStream_t stream) {
  if (args.width <= 0 || args.height <= 0) return;
  dispatch<GenRun>(type, channels, args, stream);
}

}  // namespace tf::cuda
