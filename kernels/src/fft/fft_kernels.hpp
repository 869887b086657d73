// The FFT path's own device kernels (fft_kernels.cu), around cuFFT's transforms: gathering a
// stage's window region into float planes, the spectrum product, storing the valid part, and
// making a kernel's spectrum. Launches on the given stream; every CUDA call is checked.
#pragma once
#include <cstddef>

#include <cuda_runtime_api.h>

#include "conv/conv_kernels.hpp"

namespace tf::cuda::fft {

// planes[c][y][x] (rows x cols floats per channel) = the sample of channel c at plane position
// (a.origin_x + x, a.origin_y + y) read through a.in's maps, for x < a.width + a.kw - 1 and
// y < a.height + a.kh - 1; 0 elsewhere.
void gather(const ConvArgs& a, SampleType type, int channels, float* planes, int rows, int cols, cudaStream_t stream);
// bins[c][i] *= kernel_bins[i] (complex) for every channel c and bin i < n.
void multiply(float2* bins, const float2* kernel_bins, std::size_t n, int channels, cudaStream_t stream);
// Output pixel (x, y) of a's region = planes[c][y][x], quantized to the type as every stage's output.
void store(const ConvArgs& a, SampleType type, int channels, const float* planes, int rows, int cols,
           cudaStream_t stream);
// plane (rows x cols) = the kw x kh taps at its top-left corner, zeros elsewhere.
void place_kernel(const float* taps, int kw, int kh, float* plane, int rows, int cols, cudaStream_t stream);
// bins[i] = conj(bins[i]) * scale for i < n.
void conj_scale(float2* bins, std::size_t n, float scale, cudaStream_t stream);

}  // namespace tf::cuda::fft
