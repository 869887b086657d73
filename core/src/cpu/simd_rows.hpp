// The CPU backend's vector loops, written once with Google Highway and dispatched at run time to
// the best target of this CPU that has a native fused multiply-add (AVX2, AVX-512, NEON, SVE).
// Only core/src/cpu includes this; builds without Highway use the scalar loops of convolve.cpp.
#pragma once
#include <cstddef>

namespace tf::cpu::simd {

// The Highway target the loops run on ("AVX2", "AVX3", ...), or nullptr when this CPU has none with
// native FMA: targets without it (SSSE3, SSE4, EMU128) would round mul and add apart.
const char* target();

// acc[i] = fma chain over r in [0, nrows), then k in [0, count): rows[r][k * step + i] * taps[r * count + k],
// starting from 0 when `fresh`, else from acc[i] — one float32 FMA per tap, in exactly that order
// (docs/design.md, contract 2), vectorized across i only. Precondition: target() != nullptr.
void fma_rows(float* acc, const float* const* rows, int nrows, std::ptrdiff_t step, const float* taps, int count,
              std::size_t n, bool fresh);

}  // namespace tf::cpu::simd
