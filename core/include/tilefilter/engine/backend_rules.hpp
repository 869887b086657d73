// Rules every backend follows, so that the CPU and the GPUs give the same bits (docs/design.md,
// contract 2): the constant border's value, when a chain runs on a tile in one go, and when a
// convolution takes the FFT path. The CPU backend (engine/cpu.hpp) and the CUDA backend (kernels/)
// both ask these; neither decides them on its own.
#pragma once

#include "tilefilter/engine/device.hpp"
#include "tilefilter/engine/tiling.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/image/border.hpp"
#include "tilefilter/image/image.hpp"

namespace tf {

// The constant border value as the image type would hold it (rounded and saturated).
float quantized_border_value(const Border& border, PixelType type);

// True when a chain can run on this tile in one go: every border position of every intermediate
// can be re-synthesized from pixels the tile holds. False e.g. for wrap borders: the job then runs
// the chain filter by filter (same bits, one more round trip).
bool chain_fits_tile(const Chain& chain, const Tile& tile, int image_width, int image_height, BorderMode mode);

// The FFT path for large general 2-D kernels (core/src/engine/cpu/fft_convolve.cpp on the CPU, cuFFT
// on GPUs): not bit-identical to direct convolution, within a stated bound of a float64 reference. A
// convolution takes it when it is a general (non-separable, non-box) 2-D kernel of at least
// kFftMinTaps taps, FFTW was found at build time and the job is not exact: a choice made from the
// kernel alone, never from the tile or the number of workers.
constexpr int kFftMinTaps = 25 * 25;
bool fft_available();
// The next size at or above n that FFT libraries transform fast (2^a 3^b 5^c 7^d): the transform
// size of FFTW here and of cuFFT on GPUs.
int fft_fast_size(int n);
bool uses_fft(const Convolution& conv);
// A single-convolution stage whose convolution uses_fft().
bool stage_uses_fft(const Stage& stage);
// True when some stage of the job's chain is a single convolution that uses_fft() and !job.exact.
bool chain_uses_fft(const TileJob& job);

}  // namespace tf
