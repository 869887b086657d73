// Pixel I/O and quantization, per thread: a pixel as stored (Raw: loaded with one vector access where
// alignment allows) and as computed (Px: float, or float4 for three or four channels); conversion
// of integer samples to float; rounding and saturation of integer outputs; packing and storing;
// and the epilogue that turns a run of accumulators into stored output pixels. Device code only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "conv/block_layout.hpp"
#include "conv_kernels.hpp"

namespace tf::cuda::conv {

// A pixel in shared memory and registers: float for one channel, float4 for three (padded) or four.
template <int C> struct PxT { using type = float4; };
template <> struct PxT<1> { using type = float; };
template <int C> using Px = typename PxT<C>::type;

template <int C> __device__ __forceinline__ Px<C> splat(float v) {
  if constexpr (C == 1) return v;
  else return make_float4(v, v, v, C == 4 ? v : 0.0f);
}

// acc += v * t, per channel, as one fused multiply-add each (docs/design.md, contract 2).
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

template <int C, typename T> __device__ __forceinline__ Raw<C, T> load_raw(const unsigned char* row, int x) {
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
  if constexpr (C == 4 && sizeof(T) == 1)
    return make_float4(u8_at<0>(r.p), u8_at<1>(r.p), u8_at<2>(r.p), u8_at<3>(r.p));
  else if constexpr (C == 4 && sizeof(T) == 2)
    return make_float4(u16_at<0>(r.p.x), u16_at<1>(r.p.x), u16_at<0>(r.p.y), u16_at<1>(r.p.y));
  else if constexpr (C == 4) return r.p;
  else if constexpr (C == 1) return sample_to_float(r.v[0]);
  else return make_float4(sample_to_float(r.v[0]), sample_to_float(r.v[1]), sample_to_float(r.v[2]), 0.0f);
}

// Quantization of an integer output: core's std::min(std::max(std::rint(v), 0), hi), computed as
// clamp then round (the same value for every v: rounding cannot cross 0 or hi the other way) and
// rounded by adding 1.5 * 2^23, whose ulp is 1, so the add rounds to nearest-even. The result's low
// 16 bits are the integer. Full-rate instructions only (rintf and float->int are quarter-rate). One-
// and three-channel pixels and the FFT path take it; RGBA ones go through pack(), whose float->int
// conversions the compiler fuses with the saturating packs (F2IP: two samples an instruction).
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

// Two rounded samples saturated and packed by one instruction: d = hi:lo as two u16, or
// (c << 16) | hi:lo as two u8 over c's low half. __float2int_rn rounds to nearest-even and saturates
// to int (NaN to 0), so F2I + pack is quantized_bits()'s clamp-then-round, sample for sample.
__device__ __forceinline__ unsigned int pack_u16x2(int hi, int lo) {
  unsigned int d;
  asm("cvt.pack.sat.u16.s32 %0, %1, %2;" : "=r"(d) : "r"(hi), "r"(lo));
  return d;
}
__device__ __forceinline__ unsigned int pack_u8x2(int hi, int lo, unsigned int c) {
  unsigned int d;
  asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(hi), "r"(lo), "r"(c));
  return d;
}

template <int C, typename T> __device__ __forceinline__ Out<C, T> pack(const float (&o)[C]) {
  Out<C, T> r;
  if constexpr (C == 4 && sizeof(T) == 1) {
    const int t0 = __float2int_rn(o[0]), t1 = __float2int_rn(o[1]), t2 = __float2int_rn(o[2]),
              t3 = __float2int_rn(o[3]);
    r.p = pack_u8x2(t1, t0, pack_u8x2(t3, t2, 0u));
  } else if constexpr (C == 4 && sizeof(T) == 2) {
    r.p = make_uint2(pack_u16x2(__float2int_rn(o[1]), __float2int_rn(o[0])),
                     pack_u16x2(__float2int_rn(o[3]), __float2int_rn(o[2])));
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
  return reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(a.scratch) +
                                  static_cast<std::size_t>(y) * a.scratch_pitch) +
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

// The epilogue of one output pixel (see Epilogue). Float4 pixels go to the scratch plane in one
// 16-byte store when Vec; a caller whose accumulators feed packed integer stores too passes false
// (four 4-byte stores): a 16-byte store needs the pixel in four aligned consecutive registers, and
// the compiler then moves every accumulator there before the branch on the epilogue (the separable
// kernel's column pass: 24 moves per thread and step).
template <int C, typename T, bool Vec = true>
__device__ __forceinline__ void emit(const ConvArgs& a, int x, int y, const Px<C>& v) {
  float o[C];
#pragma unroll
  for (int c = 0; c < C; ++c) o[c] = channel<C>(v, c);
  if (a.epilogue == Epilogue::StoreFloat) {
    float* s = scratch_at<C>(a, x, y);
    if constexpr (C == 4 && Vec) *reinterpret_cast<float4*>(s) = v;
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
  } else if (a.epilogue == Epilogue::Sum) {
    const float* s = scratch_at<C>(a, x, y);
#pragma unroll
    for (int c = 0; c < C; ++c) o[c] = __fadd_rn(s[c], o[c]);
  }
  put<C, T>(out_at<C, T>(a, x, y), pack<C, T>(o));
}

template <int C> __device__ __forceinline__ void channels(const Px<C>& v, float (&o)[C]) {
#pragma unroll
  for (int c = 0; c < C; ++c) o[c] = channel<C>(v, c);
}

// kRun pixels of one column, rows y0.. (those below y_end): one address computation for all of them.
template <int C, typename T>
__device__ __forceinline__ void emit_column(const ConvArgs& a, int x, int y0, int y_end, const Px<C> (&v)[kRun]) {
  if (a.epilogue == Epilogue::Store) {
    unsigned char* row = reinterpret_cast<unsigned char*>(out_at<C, T>(a, x, y0));
    auto store = [&](int j) {
      float o[C];
      channels<C>(v[j], o);
      put<C, T>(reinterpret_cast<T*>(row), pack<C, T>(o));
      row += a.out_pitch;
    };
    if (y0 + kRun <= y_end) {  // every run but a strip's last: no per-row guards
#pragma unroll
      for (int j = 0; j < kRun; ++j) store(j);
    } else {
#pragma unroll
      for (int j = 0; j < kRun; ++j)
        if (y0 + j < y_end) store(j);
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < kRun; ++j)
    if (y0 + j < y_end) emit<C, T, false>(a, x, y0 + j, v[j]);
}

// A run of kRun pixels of one row starting at x0: 16-byte stores when the whole run is inside.
// Where that packed path exists (8- and 16-bit RGBA), the other epilogues store floats one at a
// time (emit's Vec): a float4 store would make the compiler move all 64 accumulators of the 2-D
// kernel into aligned quads before the branch on the epilogue.
template <int C, typename T>
__device__ __forceinline__ void emit_run(const ConvArgs& a, int x0, int y, const Px<C> (&v)[kRun]) {
  if (y >= a.height) return;
  if constexpr (C == 4 && sizeof(T) <= 2) {
    if (a.epilogue == Epilogue::Store && x0 + kRun <= a.width) {
      Out<C, T> p[kRun];
#pragma unroll
      for (int i = 0; i < kRun; ++i) {
        const float o[4] = {v[i].x, v[i].y, v[i].z, v[i].w};
        p[i] = pack<C, T>(o);
      }
      uint4* d = reinterpret_cast<uint4*>(out_at<C, T>(a, x0, y));
      if constexpr (sizeof(T) == 1) {
#pragma unroll
        for (int q = 0; q < kRun / 4; ++q)
          d[q] = make_uint4(p[4 * q].p, p[4 * q + 1].p, p[4 * q + 2].p, p[4 * q + 3].p);
      } else {
#pragma unroll
        for (int q = 0; q < kRun / 2; ++q)
          d[q] = make_uint4(p[2 * q].p.x, p[2 * q].p.y, p[2 * q + 1].p.x, p[2 * q + 1].p.y);
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < kRun; ++i)
    if (x0 + i < a.width) emit<C, T, !(C == 4 && sizeof(T) <= 2)>(a, x0 + i, y, v[i]);
}

}  // namespace tf::cuda::conv
