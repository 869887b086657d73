// The FFT path's own device kernels (fft_kernels.cu), around cuFFT's transforms: gathering a batch
// of a stage's blocks into float planes, the spectrum product, storing each block's part of the
// output, and making a kernel's spectrum. Launches on the given stream; every CUDA call is checked.
#pragma once
#include <cstddef>

#include <cuda_runtime_api.h>

#include "conv/conv_kernels.hpp"

namespace tf::cuda::fft {

// One batch of an FFT stage's blocks (core's FftBlocks and BlockSpan, as plain ints for nvcc):
// blocks first .. first + batch - 1 of the span, row by row, in the planes of slots 0 .. batch - 1
// (slot s, channel c: plane s * channels + c, rows x cols floats). Positions in image coordinates,
// as the stage's plane and output region.
struct BlockBatch {
  int block_w = 0, block_h = 0, cols = 0, rows = 0;     // the grid
  int span_x0 = 0, span_y0 = 0, across = 0, count = 0;  // the blocks meeting the output region
  int first = 0, batch = 0;
  int image_w = 0, image_h = 0;
  int plane_x = 0, plane_y = 0;        // the stage's input plane's origin
  int computed_x = 0, computed_y = 0;  // the output region's origin (a.width x a.height)
  int halo_left = 0, halo_top = 0;     // the kernel's anchor
};
// Every slot's planes = its block (cut by the image's edges) grown by the kernel (a.kw x a.kh), read
// through a.in's maps, zeros past it; a slot past the span's last block is all zeros.
void gather_blocks(const ConvArgs& a, const BlockBatch& b, SampleType type, int channels, float* planes,
                   cudaStream_t stream);
// Output pixels of a's region inside each slot's block = the block's result sample there, quantized
// to the type as every stage's output.
void store_blocks(const ConvArgs& a, const BlockBatch& b, SampleType type, int channels, const float* planes,
                  cudaStream_t stream);
// bins[p][i] *= kernel_bins[i] (complex) for every plane p < planes and bin i < n.
void multiply(float2* bins, const float2* kernel_bins, std::size_t n, int planes, cudaStream_t stream);
// plane (rows x cols) = the kw x kh taps at its top-left corner, zeros elsewhere.
void place_kernel(const float* taps, int kw, int kh, float* plane, int rows, int cols, cudaStream_t stream);
// bins[i] = conj(bins[i]) * scale for i < n.
void conj_scale(float2* bins, std::size_t n, float scale, cudaStream_t stream);

}  // namespace tf::cuda::fft
