// The CPU backend's vector loops, written once with Google Highway and dispatched at run time to
// the best target of this CPU that has a native fused multiply-add (AVX2, AVX-512, NEON, SVE).
// Only core/src/cpu includes this; builds without Highway use the scalar loops of convolve.cpp.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tf::cpu::simd {

// The Highway target the loops run on ("AVX2", "AVX3", ...), or nullptr when this CPU has none with
// native FMA: targets without it (SSSE3, SSE4, EMU128) would round mul and add apart.
const char* target();

// acc[i] = fma chain over r in [0, nrows), then k in [0, count): rows[r][k * step + i] * taps[r * count + k],
// starting from 0 when `fresh`, else from acc[i] — one float32 FMA per tap, in exactly that order
// (docs/design.md, contract 2), vectorized across i only. Precondition: target() != nullptr.
void fma_rows(float* acc, const float* const* rows, int nrows, std::ptrdiff_t step, const float* taps, int count,
              std::size_t n, bool fresh);

// Two neighbouring output rows of a column pass: acc0 as fma_rows(acc0, lines, count, 0, taps, 1, n,
// true) and acc1 the same over lines + 1 (count + 1 lines in all), the same FMAs in the same order;
// each line is loaded once for both outputs. Precondition: target() != nullptr.
void fma_column2(float* acc0, float* acc1, const float* const* lines, const float* taps, int count, std::size_t n);

// dst[i] = float(src[i]); and dst[i] = src[i] rounded to nearest (ties to even) and saturated to
// [0, 255]: an 8-bit result's quantize and store in one pass, the same bits as the scalar loops.
// No FMA involved; the CPU backend calls them where target() != nullptr, with the loops above.
void u8_to_float(const std::uint8_t* src, float* dst, std::size_t n);
void quantize_to_u8(const float* src, std::uint8_t* dst, std::size_t n);

}  // namespace tf::cpu::simd
