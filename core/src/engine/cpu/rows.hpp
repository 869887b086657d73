// The CPU backend's row kernels: the loops every convolution, combination and conversion of a
// plane's rows runs (rows.cpp), each giving the same bits whether it takes the vector loops or the
// scalar ones (docs/design.md, contract 2).
#pragma once
#include <cstddef>
#include <cstdint>

#include "tilefilter/image/image.hpp"

namespace tf::cpu {

// The Highway target the loops take ("AVX2", ...), or nullptr for the scalar sweeps.
const char* vector_target();

// acc[i] = FMAs over rows r, then taps k of each row, of rows[r][k * step + i] * taps[r * count + k],
// from 0 when `fresh` (else from acc[i]). A row pass is one row with step = channels, a column pass
// `nrows` rows of one tap each, a 2-D kernel its rows with step = channels.
void fma_rows(float* acc, const float* const* rows, int nrows, std::ptrdiff_t step, const float* taps, int count,
              std::size_t n, bool fresh);
// Two neighbouring output rows of a column pass: fma_rows over lines[0 .. count) into acc0 and over
// lines[1 .. count] into acc1, one tap per line, from 0.
void fma_column2(float* acc0, float* acc1, const float* const* lines, const float* taps, int count, std::size_t n);

// out = sqrt(a² + b²) (fused), and out = a + b: the two ways a stage combines its convolutions.
void magnitude_row(float* __restrict out, const float* __restrict a, const float* __restrict b, std::size_t n);
void sum_row(float* __restrict out, const float* __restrict a, const float* __restrict b, std::size_t n);
// Round to nearest-even and saturate to [0, hi].
void quantize_row(float* __restrict p, std::size_t n, float hi);
// Type conversions of contiguous samples (exact in both directions for quantized values).
void float_to_u8(const float* __restrict s, std::uint8_t* __restrict d, std::size_t n);
void float_to_u16(const float* __restrict s, std::uint16_t* __restrict d, std::size_t n);
void to_float(const std::uint8_t* s, float* d, std::size_t n);
void to_float(const std::uint16_t* s, float* d, std::size_t n);
void to_float(const float* s, float* d, std::size_t n);

// One row of n samples of the last stage, quantized for dst's type and written at dst's row y from
// sample x0 (quantize()'s rounding and saturation; `p` may be left unquantized).
void quantize_store_row(float* p, std::size_t n, const ImageView& dst, int y, std::size_t x0);

}  // namespace tf::cpu
