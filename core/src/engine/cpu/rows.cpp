// The CPU backend's row kernels (rows.hpp): scalar sweeps cloned for x86-64-v3 where GCC builds
// clones, and Highway's vector loops (simd_rows.hpp) where the CPU has an FMA target.
#include "engine/cpu/rows.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/util/error.hpp"

#if TF_HAVE_HWY
#include "engine/cpu/simd_rows.hpp"
#endif

// std::fma is only fast with hardware FMA: build an x86-64-v3 clone next to a portable one.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define TF_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TF_MULTIVERSION
#endif

namespace tf::cpu {

namespace {

std::atomic<bool> simd_enabled{true};

TF_MULTIVERSION void fma_row(float* __restrict acc, const float* __restrict src, float tap, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) acc[i] = std::fma(src[i], tap, acc[i]);
}

// Four taps in one sweep: acc = fma(s3, t3, fma(s2, t2, fma(s1, t1, fma(s0, t0, acc)))) — the same
// order as four single sweeps, with a quarter of the accumulator traffic.
TF_MULTIVERSION void fma_row4(float* __restrict acc, const float* __restrict s0, const float* __restrict s1,
                              const float* __restrict s2, const float* __restrict s3, const float* taps,
                              std::size_t n) {
  const float t0 = taps[0], t1 = taps[1], t2 = taps[2], t3 = taps[3];
  for (std::size_t i = 0; i < n; ++i)
    acc[i] = std::fma(s3[i], t3, std::fma(s2[i], t2, std::fma(s1[i], t1, std::fma(s0[i], t0, acc[i]))));
}

// The sweeps for the taps left over after groups of four: two, three or five taps in one pass
// (a single-tap sweep costs a load and store of acc per FMA: 9 taps as 4 + 5 instead of 4 + 4 + 1).
TF_MULTIVERSION void fma_row2(float* __restrict acc, const float* __restrict s0, const float* __restrict s1,
                              const float* taps, std::size_t n) {
  const float t0 = taps[0], t1 = taps[1];
  for (std::size_t i = 0; i < n; ++i) acc[i] = std::fma(s1[i], t1, std::fma(s0[i], t0, acc[i]));
}
TF_MULTIVERSION void fma_row3(float* __restrict acc, const float* __restrict s0, const float* __restrict s1,
                              const float* __restrict s2, const float* taps, std::size_t n) {
  const float t0 = taps[0], t1 = taps[1], t2 = taps[2];
  for (std::size_t i = 0; i < n; ++i) acc[i] = std::fma(s2[i], t2, std::fma(s1[i], t1, std::fma(s0[i], t0, acc[i])));
}
TF_MULTIVERSION void fma_row5(float* __restrict acc, const float* __restrict s0, const float* __restrict s1,
                              const float* __restrict s2, const float* __restrict s3, const float* __restrict s4,
                              const float* taps, std::size_t n) {
  const float t0 = taps[0], t1 = taps[1], t2 = taps[2], t3 = taps[3], t4 = taps[4];
  for (std::size_t i = 0; i < n; ++i)
    acc[i] =
        std::fma(s4[i], t4, std::fma(s3[i], t3, std::fma(s2[i], t2, std::fma(s1[i], t1, std::fma(s0[i], t0, acc[i])))));
}

// acc[i] = sum over k of src(k)[i] * taps[k], k in order. However the taps are grouped into sweeps,
// each output's FMAs run in tap order: the bits do not depend on it.
template <class Src> void fma_taps(float* acc, Src src, const float* taps, int count, std::size_t n) {
  const int fours = count % 4 == 1 && count >= 5 ? count / 4 - 1 : count / 4;  // a lone last tap joins a group of 5
  int k = 0;
  for (int g = 0; g < fours; ++g, k += 4) fma_row4(acc, src(k), src(k + 1), src(k + 2), src(k + 3), taps + k, n);
  switch (count - k) {
    case 0: break;
    case 1: fma_row(acc, src(k), taps[k], n); break;
    case 2: fma_row2(acc, src(k), src(k + 1), taps + k, n); break;
    case 3: fma_row3(acc, src(k), src(k + 1), src(k + 2), taps + k, n); break;
    case 5: fma_row5(acc, src(k), src(k + 1), src(k + 2), src(k + 3), src(k + 4), taps + k, n); break;
    default: throw Error(ErrorKind::Internal, "fma_taps: unexpected remainder");
  }
}

// Widening conversions of contiguous samples, to_float's scalar loops (exact for quantized values).
TF_MULTIVERSION void u8_to_float(const std::uint8_t* __restrict s, float* __restrict d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<float>(s[i]);
}
TF_MULTIVERSION void u16_to_float(const std::uint16_t* __restrict s, float* __restrict d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<float>(s[i]);
}

}  // namespace

const char* vector_target() {
#if TF_HAVE_HWY
  return simd_enabled.load(std::memory_order_relaxed) ? simd::target() : nullptr;
#else
  return nullptr;
#endif
}

// The one accumulation every convolution runs: acc[i] = FMAs over rows r, then taps k of each row, of
// rows[r][k * step + i] * taps[r * count + k], from 0 when `fresh` (else from acc[i]). A row pass is
// one row with step = channels, a column pass `nrows` rows of one tap each, a 2-D kernel its rows with
// step = channels. Vectorized across i (Highway) where the CPU has an FMA target, else the sweeps above.
void fma_rows(float* acc, const float* const* rows, int nrows, std::ptrdiff_t step, const float* taps, int count,
              std::size_t n, bool fresh) {
#if TF_HAVE_HWY
  if (vector_target()) {
    simd::fma_rows(acc, rows, nrows, step, taps, count, n, fresh);
    return;
  }
#endif
  if (fresh) std::fill(acc, acc + n, 0.0f);
  if (count == 1) {
    fma_taps(
        acc, [&](int r) { return rows[r]; }, taps, nrows, n);
    return;
  }
  for (int r = 0; r < nrows; ++r)
    fma_taps(
        acc, [&](int k) { return rows[r] + k * step; }, taps + static_cast<std::size_t>(r) * count, count, n);
}

// Two neighbouring output rows of a column pass: fma_rows over lines[0 .. count) into acc0 and over
// lines[1 .. count] into acc1, one tap per line, from 0 — the same FMAs in the same order as two
// fma_rows calls, with each line loaded once for both outputs where there are vector loops.
void fma_column2(float* acc0, float* acc1, const float* const* lines, const float* taps, int count, std::size_t n) {
#if TF_HAVE_HWY
  if (vector_target()) {
    simd::fma_column2(acc0, acc1, lines, taps, count, n);
    return;
  }
#endif
  fma_rows(acc0, lines, count, 0, taps, 1, n, true);
  fma_rows(acc1, lines + 1, count, 0, taps, 1, n, true);
}

TF_MULTIVERSION void magnitude_row(float* __restrict out, const float* __restrict a, const float* __restrict b,
                                   std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = std::sqrt(std::fma(a[i], a[i], b[i] * b[i]));
}

TF_MULTIVERSION void sum_row(float* __restrict out, const float* __restrict a, const float* __restrict b,
                             std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

TF_MULTIVERSION void quantize_row(float* __restrict p, std::size_t n, float hi) {
  for (std::size_t i = 0; i < n; ++i) p[i] = std::min(std::max(std::rint(p[i]), 0.0f), hi);
}

TF_MULTIVERSION void float_to_u8(const float* __restrict s, std::uint8_t* __restrict d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<std::uint8_t>(static_cast<int>(s[i]));
}
TF_MULTIVERSION void float_to_u16(const float* __restrict s, std::uint16_t* __restrict d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<std::uint16_t>(static_cast<int>(s[i]));
}
void to_float(const std::uint8_t* s, float* d, std::size_t n) {
#if TF_HAVE_HWY
  if (vector_target()) {
    simd::u8_to_float(s, d, n);
    return;
  }
#endif
  u8_to_float(s, d, n);
}
void to_float(const std::uint16_t* s, float* d, std::size_t n) { u16_to_float(s, d, n); }
void to_float(const float* s, float* d, std::size_t n) { std::memcpy(d, s, n * sizeof(float)); }

// One row of n samples of the last stage, quantized for dst's type (8-bit results in one vector
// pass where there is one) and written at dst's row y from sample x0: the same rounding and
// saturation as quantize(); `p` may be left unquantized.
void quantize_store_row(float* p, std::size_t n, const ImageView& dst, int y, std::size_t x0) {
  switch (dst.format.type) {
    case PixelType::U8:
#if TF_HAVE_HWY
      if (vector_target()) {
        simd::quantize_to_u8(p, dst.row_as<std::uint8_t>(y) + x0, n);
        break;
      }
#endif
      quantize_row(p, n, 255.0f);
      float_to_u8(p, dst.row_as<std::uint8_t>(y) + x0, n);
      break;
    case PixelType::U16:
      quantize_row(p, n, 65535.0f);
      float_to_u16(p, dst.row_as<std::uint16_t>(y) + x0, n);
      break;
    case PixelType::F32: std::memcpy(dst.row_as<float>(y) + x0, p, n * sizeof(float)); break;
  }
}

std::string simd_target() {
  const char* name = vector_target();
  return name ? name : "scalar";
}
void set_simd_enabled(bool enabled) { simd_enabled.store(enabled, std::memory_order_relaxed); }

}  // namespace tf::cpu
