// Highway implementation of simd_rows.hpp. This file is compiled once per target through
// hwy/foreach_target.h; the dispatch table and the entry points are in the HWY_ONCE part at the end.
// Lanes are neighbouring samples of one row (pixels and channels), never taps: every output keeps its
// own FMA chain in tap order, so the vector width cannot change a bit.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "engine/cpu/simd_rows.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "engine/cpu/simd_rows.hpp"

HWY_BEFORE_NAMESPACE();
namespace tf::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

const char* TargetName() {
#if HWY_NATIVE_FMA
  return hwy::TargetName(HWY_TARGET);
#else
  return nullptr;  // MulAdd would be a multiply and an add, rounded twice
#endif
}

#if HWY_NATIVE_FMA
// Four neighbouring vectors of one line times one tap, onto four accumulators, in that order.
template <class D, class V>
HWY_INLINE void MulAdd4(D d, const float* HWY_RESTRICT s, V tap, V& a0, V& a1, V& a2, V& a3) {
  const std::size_t N = hn::Lanes(d);
  a0 = hn::MulAdd(hn::LoadU(d, s), tap, a0);
  a1 = hn::MulAdd(hn::LoadU(d, s + N), tap, a1);
  a2 = hn::MulAdd(hn::LoadU(d, s + 2 * N), tap, a2);
  a3 = hn::MulAdd(hn::LoadU(d, s + 3 * N), tap, a3);
}

template <class D, class V> HWY_INLINE void Store4(D d, V a0, V a1, V a2, V a3, float* HWY_RESTRICT p) {
  const std::size_t N = hn::Lanes(d);
  hn::StoreU(a0, d, p);
  hn::StoreU(a1, d, p + N);
  hn::StoreU(a2, d, p + 2 * N);
  hn::StoreU(a3, d, p + 3 * N);
}

// Eight vectors of outputs at a time: eight independent FMA chains hide the FMA latency, and each
// tap's broadcast serves all of them. Sizeless-safe (no arrays of vectors) for SVE.
template <class D>
HWY_INLINE void Block8(D d, float* HWY_RESTRICT acc, const float* const* rows, int nrows, std::ptrdiff_t step,
                       const float* taps, int count, std::size_t i, bool fresh) {
  const std::size_t N = hn::Lanes(d);
  auto a0 = fresh ? hn::Zero(d) : hn::LoadU(d, acc + i);
  auto a1 = fresh ? hn::Zero(d) : hn::LoadU(d, acc + i + N);
  auto a2 = fresh ? hn::Zero(d) : hn::LoadU(d, acc + i + 2 * N);
  auto a3 = fresh ? hn::Zero(d) : hn::LoadU(d, acc + i + 3 * N);
  auto a4 = fresh ? hn::Zero(d) : hn::LoadU(d, acc + i + 4 * N);
  auto a5 = fresh ? hn::Zero(d) : hn::LoadU(d, acc + i + 5 * N);
  auto a6 = fresh ? hn::Zero(d) : hn::LoadU(d, acc + i + 6 * N);
  auto a7 = fresh ? hn::Zero(d) : hn::LoadU(d, acc + i + 7 * N);
  const float* t = taps;
  for (int r = 0; r < nrows; ++r) {
    const float* s = rows[r] + i;
    for (int k = 0; k < count; ++k, s += step) {
      const auto tap = hn::Set(d, *t++);
      MulAdd4(d, s, tap, a0, a1, a2, a3);
      MulAdd4(d, s + 4 * N, tap, a4, a5, a6, a7);
    }
  }
  Store4(d, a0, a1, a2, a3, acc + i);
  Store4(d, a4, a5, a6, a7, acc + i + 4 * N);
}

template <class D>
HWY_INLINE void Block1(D d, float* HWY_RESTRICT acc, const float* const* rows, int nrows, std::ptrdiff_t step,
                       const float* taps, int count, std::size_t i, bool fresh) {
  auto a = fresh ? hn::Zero(d) : hn::LoadU(d, acc + i);
  const float* t = taps;
  for (int r = 0; r < nrows; ++r) {
    const float* s = rows[r] + i;
    for (int k = 0; k < count; ++k, s += step) a = hn::MulAdd(hn::LoadU(d, s), hn::Set(d, *t++), a);
  }
  hn::StoreU(a, d, acc + i);
}

// Two neighbouring output rows of a column pass, four vectors of each: acc0 over lines[0 .. count),
// acc1 over lines[1 .. count]. Line j is loaded once and feeds acc0's tap j and acc1's tap j - 1, so
// each output still takes its FMAs in tap order, from 0 as Block8 (MulAdd onto zero, not Mul: a -0
// product plus +0 is +0), while two outputs take count + 1 line loads instead of 2 count.
template <class D>
HWY_INLINE void Column2(D d, float* HWY_RESTRICT acc0, float* HWY_RESTRICT acc1, const float* const* lines,
                        const float* taps, int count, std::size_t i) {
  const std::size_t N = hn::Lanes(d);
  auto x0 = hn::Zero(d), x1 = hn::Zero(d), x2 = hn::Zero(d), x3 = hn::Zero(d);  // acc0
  auto y0 = hn::Zero(d), y1 = hn::Zero(d), y2 = hn::Zero(d), y3 = hn::Zero(d);  // acc1
  MulAdd4(d, lines[0] + i, hn::Set(d, taps[0]), x0, x1, x2, x3);
  for (int j = 1; j < count; ++j) {
    const float* s = lines[j] + i;
    const auto t0 = hn::Set(d, taps[j]), t1 = hn::Set(d, taps[j - 1]);
    const auto l0 = hn::LoadU(d, s), l1 = hn::LoadU(d, s + N), l2 = hn::LoadU(d, s + 2 * N),
               l3 = hn::LoadU(d, s + 3 * N);
    x0 = hn::MulAdd(l0, t0, x0);
    x1 = hn::MulAdd(l1, t0, x1);
    x2 = hn::MulAdd(l2, t0, x2);
    x3 = hn::MulAdd(l3, t0, x3);
    y0 = hn::MulAdd(l0, t1, y0);
    y1 = hn::MulAdd(l1, t1, y1);
    y2 = hn::MulAdd(l2, t1, y2);
    y3 = hn::MulAdd(l3, t1, y3);
  }
  MulAdd4(d, lines[count] + i, hn::Set(d, taps[count - 1]), y0, y1, y2, y3);
  Store4(d, x0, x1, x2, x3, acc0 + i);
  Store4(d, y0, y1, y2, y3, acc1 + i);
}

#if !HWY_HAVE_SCALABLE
// A row pass of K taps (one row, from 0) whose taps are `step` = N / R floats apart, R taps to a
// vector (4-channel pixels: R = N / 4): V neighbouring vectors of outputs read the row at offsets
// (j R + k) step, so the load at m step serves every output vector j with a tap k = m - j R in
// [0, K) — (V - 1) R + K loads for V K FMAs (37 for 72 at 9 taps, 8 vectors of 16) where Block8
// takes one a FMA, and the taps stay in registers. The loads come in order of m, so each output
// vector still takes its taps in order k = 0, 1, ..., K - 1, from 0 as Block8: the same bits.
template <int K, int V, int R, class D>
HWY_INLINE void RowShared(D d, float* HWY_RESTRICT acc, const float* row, const hn::Vec<D> (&tv)[K], std::size_t i) {
  constexpr std::size_t N = hn::MaxLanes(D());
  constexpr std::size_t step = N / R;
  hn::Vec<D> a[V];
  HWY_UNROLL(8)
  for (int j = 0; j < V; ++j) a[j] = hn::Zero(d);
  const float* s = row + i;
  HWY_UNROLL(128)
  for (int m = 0; m < (V - 1) * R + K; ++m) {
    auto line = hn::LoadU(d, s + static_cast<std::size_t>(m) * step);
#if HWY_ARCH_X86 && defined(__GNUC__)
    // Keeps the line in a register: left alone, the compiler folds the load into every FMA that
    // takes it as a memory operand, and the loads are back to one a FMA.
    asm("" : "+v"(line.raw));
#endif
    HWY_UNROLL(8)
    for (int j = 0; j < V; ++j) {
      const int k = m - j * R;
      if (k >= 0 && k < K) a[j] = hn::MulAdd(line, tv[k], a[j]);
    }
  }
  HWY_UNROLL(8)
  for (int j = 0; j < V; ++j) hn::StoreU(a[j], d, acc + i + static_cast<std::size_t>(j) * N);
}

// RowShared over samples [i, n) in steps of V vectors; returns where it stopped. Where the K taps,
// V accumulators and a line would not fit the registers (32 vectors of 16 lanes or more, else 16
// assumed), returns i: Block8 is then faster.
template <int K, int R, class D>
std::size_t RowPassShared(D d, float* HWY_RESTRICT acc, const float* row, const float* taps, std::size_t n,
                          std::size_t i) {
  constexpr std::size_t N = hn::MaxLanes(D());
  constexpr int V = N >= 16 ? 8 : 4;
  constexpr int registers = N >= 16 ? 32 : 16;
  if constexpr (K + V + 1 > registers) {
    (void)d, (void)acc, (void)row, (void)taps, (void)n;
    return i;
  } else {
    hn::Vec<D> tv[K];
    HWY_UNROLL(16)
    for (int k = 0; k < K; ++k) tv[k] = hn::Set(d, taps[k]);
    for (; i + V * N <= n; i += V * N) RowShared<K, V, R>(d, acc, row, tv, i);
    return i;
  }
}

// A row pass of 4-channel samples (step 4) with an odd number of taps from 3 to 13 through
// RowPassShared, from sample i; returns where it stopped (i itself for any other row pass).
template <class D>
std::size_t RowPassFast(D d, float* HWY_RESTRICT acc, const float* row, std::ptrdiff_t step, const float* taps,
                        int count, std::size_t n, std::size_t i) {
  constexpr std::size_t N = hn::MaxLanes(D());
  if constexpr (N % 4 == 0) {
    if (step != 4) return i;
    constexpr int R = static_cast<int>(N / 4);
    switch (count) {
      case 3: return RowPassShared<3, R>(d, acc, row, taps, n, i);
      case 5: return RowPassShared<5, R>(d, acc, row, taps, n, i);
      case 7: return RowPassShared<7, R>(d, acc, row, taps, n, i);
      case 9: return RowPassShared<9, R>(d, acc, row, taps, n, i);
      case 11: return RowPassShared<11, R>(d, acc, row, taps, n, i);
      case 13: return RowPassShared<13, R>(d, acc, row, taps, n, i);
      default: return i;
    }
  } else {
    (void)d, (void)acc, (void)row, (void)step, (void)taps, (void)count, (void)n;
    return i;
  }
}
#endif  // !HWY_HAVE_SCALABLE
#endif  // HWY_NATIVE_FMA

// FmaRows from sample i of the rows on.
void RowsFrom(float* HWY_RESTRICT acc, const float* const* rows, int nrows, std::ptrdiff_t step, const float* taps,
              int count, std::size_t n, bool fresh, std::size_t i) {
#if HWY_NATIVE_FMA
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
#if !HWY_HAVE_SCALABLE
  if (nrows == 1 && fresh) i = RowPassFast(d, acc, rows[0], step, taps, count, n, i);
#endif
  for (; i + 8 * N <= n; i += 8 * N) Block8(d, acc, rows, nrows, step, taps, count, i, fresh);
  for (; i + N <= n; i += N) Block1(d, acc, rows, nrows, step, taps, count, i, fresh);
  // The last samples of a row one at a time, in the same tap order.
  for (; i < n; ++i) {
    float a = fresh ? 0.0f : acc[i];
    const float* t = taps;
    for (int r = 0; r < nrows; ++r)
      for (int k = 0; k < count; ++k) a = std::fma(rows[r][k * step + static_cast<std::ptrdiff_t>(i)], *t++, a);
    acc[i] = a;
  }
#else
  (void)acc, (void)rows, (void)nrows, (void)step, (void)taps, (void)count, (void)n, (void)fresh, (void)i;
#endif
}

void FmaRows(float* HWY_RESTRICT acc, const float* const* rows, int nrows, std::ptrdiff_t step, const float* taps,
             int count, std::size_t n, bool fresh) {
  RowsFrom(acc, rows, nrows, step, taps, count, n, fresh, 0);
}

void FmaColumn2(float* HWY_RESTRICT acc0, float* HWY_RESTRICT acc1, const float* const* lines, const float* taps,
                int count, std::size_t n) {
#if HWY_NATIVE_FMA
  const hn::ScalableTag<float> d;
  const std::size_t N = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) Column2(d, acc0, acc1, lines, taps, count, i);
  // The rest of both rows, each as a column pass of its own.
  RowsFrom(acc0, lines, count, 0, taps, 1, n, true, i);
  RowsFrom(acc1, lines + 1, count, 0, taps, 1, n, true, i);
#else
  (void)acc0, (void)acc1, (void)lines, (void)taps, (void)count, (void)n;
#endif
}

// dst[i] = float(src[i]): every 8-bit value is exact in float32, on any target.
void U8ToFloat(const std::uint8_t* HWY_RESTRICT src, float* HWY_RESTRICT dst, std::size_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<std::uint8_t, decltype(df)> d8;
  const std::size_t N = hn::Lanes(df);
  std::size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, src + i))), df, dst + i);
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

// quantize_row then float_to_u8 of convolve.cpp in one pass: rounded to nearest, ties to even (Round,
// as std::rint under the default rounding mode), saturated to [0, 255] (Max before Min, as there),
// then narrowed; the values are integers in [0, 255] by then, which every conversion keeps exactly.
void QuantizeToU8(const float* HWY_RESTRICT src, std::uint8_t* HWY_RESTRICT dst, std::size_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<std::uint8_t, decltype(df)> d8;
  const std::size_t N = hn::Lanes(df);
  const auto lo = hn::Zero(df), hi = hn::Set(df, 255.0f);
  std::size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::Min(hn::Max(hn::Round(hn::LoadU(df, src + i)), lo), hi);
    hn::StoreU(hn::DemoteTo(d8, hn::ConvertTo(di, v)), d8, dst + i);
  }
  for (; i < n; ++i)
    dst[i] = static_cast<std::uint8_t>(static_cast<int>(std::min(std::max(std::rint(src[i]), 0.0f), 255.0f)));
}

}  // namespace HWY_NAMESPACE
}  // namespace tf::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tf::cpu::simd {

HWY_EXPORT(TargetName);
HWY_EXPORT(FmaRows);
HWY_EXPORT(FmaColumn2);
HWY_EXPORT(U8ToFloat);
HWY_EXPORT(QuantizeToU8);

const char* target() {
  static const char* const name = HWY_DYNAMIC_DISPATCH(TargetName)();
  return name;
}

void fma_rows(float* acc, const float* const* rows, int nrows, std::ptrdiff_t step, const float* taps, int count,
              std::size_t n, bool fresh) {
  HWY_DYNAMIC_DISPATCH(FmaRows)(acc, rows, nrows, step, taps, count, n, fresh);
}

void fma_column2(float* acc0, float* acc1, const float* const* lines, const float* taps, int count, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(FmaColumn2)(acc0, acc1, lines, taps, count, n);
}

void u8_to_float(const std::uint8_t* src, float* dst, std::size_t n) { HWY_DYNAMIC_DISPATCH(U8ToFloat)(src, dst, n); }

void quantize_to_u8(const float* src, std::uint8_t* dst, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(QuantizeToU8)(src, dst, n);
}

}  // namespace tf::cpu::simd
#endif
