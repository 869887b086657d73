// The FFT path's device kernels (fft_kernels.hpp). Simple one-thread-per-pixel loops: next to the
// transforms they move little data, and they read and quantize exactly as the direct kernels do
// (the border maps, conv/pixel_io.cuh's sample conversion and quantization).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "conv/pixel_io.cuh"
#include "cuda/cuda_util.hpp"
#include "fft/fft_kernels.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda::fft {

namespace {

constexpr int kBlockX = 32, kBlockY = 8;

dim3 grid_for(int w, int h) { return dim3((w + kBlockX - 1) / kBlockX, (h + kBlockY - 1) / kBlockY); }

// Where slot `slot`'s block lies: its output origin and size (cut by the image's edges), or false
// past the span's last block.
struct BlockAt {
  int x = 0, y = 0, width = 0, height = 0;
};
__device__ bool block_at(const BlockBatch& b, int slot, BlockAt& at) {
  const int k = b.first + slot;
  if (k >= b.count) return false;
  at.x = (b.span_x0 + k % b.across) * b.block_w;
  at.y = (b.span_y0 + k / b.across) * b.block_h;
  at.width = min(b.block_w, b.image_w - at.x);
  at.height = min(b.block_h, b.image_h - at.y);
  return true;
}

template <int C, typename T>
__global__ void gather_blocks_kernel(PlaneArgs in, BlockBatch b, int kw, int kh, float* planes) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  const int slot = blockIdx.z, rows = b.rows, cols = b.cols;
  if (x >= cols || y >= rows) return;
  const std::size_t plane = static_cast<std::size_t>(rows) * cols, at = static_cast<std::size_t>(y) * cols + x;
  float v[C];
#pragma unroll
  for (int c = 0; c < C; ++c) v[c] = 0.0f;
  BlockAt blk;
  if (block_at(b, slot, blk) && x < blk.width + kw - 1 && y < blk.height + kh - 1) {
    // The block's input starts at image position (blk.x - halo_left, blk.y - halo_top).
    const int mx = in.xmap[blk.x - b.halo_left - b.plane_x + x], my = in.ymap[blk.y - b.halo_top - b.plane_y + y];
    if (mx < 0 || my < 0) {
#pragma unroll
      for (int c = 0; c < C; ++c) v[c] = in.fill;
    } else {
      const T* p = reinterpret_cast<const T*>(static_cast<const unsigned char*>(in.data) +
                                              static_cast<std::size_t>(my) * in.pitch) +
                   static_cast<std::size_t>(mx) * C;
#pragma unroll
      for (int c = 0; c < C; ++c) v[c] = conv::sample_to_float(p[c]);
    }
  }
  float* slot_planes = planes + static_cast<std::size_t>(slot) * C * plane;
#pragma unroll
  for (int c = 0; c < C; ++c) slot_planes[c * plane + at] = v[c];
}

template <int C, typename T>
__global__ void store_blocks_kernel(void* out, std::size_t out_pitch, int width, int height, BlockBatch b,
                                    const float* planes) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  const int slot = blockIdx.z;
  BlockAt blk;
  if (!block_at(b, slot, blk) || x >= blk.width || y >= blk.height) return;
  // Result sample (x, y) of the block is output pixel (blk.x + x, blk.y + y) of the image.
  const int ox = blk.x + x - b.computed_x, oy = blk.y + y - b.computed_y;
  if (ox < 0 || oy < 0 || ox >= width || oy >= height) return;
  const std::size_t plane = static_cast<std::size_t>(b.rows) * b.cols, at = static_cast<std::size_t>(y) * b.cols + x;
  const float* slot_planes = planes + static_cast<std::size_t>(slot) * C * plane;
  T* d = reinterpret_cast<T*>(static_cast<unsigned char*>(out) + static_cast<std::size_t>(oy) * out_pitch) +
         static_cast<std::size_t>(ox) * C;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const float v = slot_planes[c * plane + at];
    if constexpr (sizeof(T) == 4) d[c] = v;
    else d[c] = static_cast<T>(conv::quantized_bits<T>(v) & (sizeof(T) == 1 ? 0xFFu : 0xFFFFu));
  }
}

__global__ void multiply_kernel(float2* bins, const float2* kernel_bins, std::size_t n, int planes) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float2 k = kernel_bins[i];
    for (int p = 0; p < planes; ++p) {
      float2& v = bins[p * n + i];
      const float re = v.x * k.x - v.y * k.y, im = v.x * k.y + v.y * k.x;
      v = make_float2(re, im);
    }
  }
}

__global__ void place_kernel_kernel(const float* taps, int kw, int kh, float* plane, int rows, int cols) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= cols || y >= rows) return;
  plane[static_cast<std::size_t>(y) * cols + x] = x < kw && y < kh ? taps[y * kw + x] : 0.0f;
}

__global__ void conj_scale_kernel(float2* bins, std::size_t n, float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    bins[i] = make_float2(bins[i].x * scale, -bins[i].y * scale);
}

unsigned int linear_blocks(std::size_t n) {
  return static_cast<unsigned int>(std::min<std::size_t>((n + 255) / 256, 65535));
}

template <typename T>
void gather_typed(const ConvArgs& a, const BlockBatch& b, int channels, float* planes, cudaStream_t s) {
  dim3 grid = grid_for(b.cols, b.rows);
  grid.z = b.batch;
  const dim3 block(kBlockX, kBlockY);
  switch (channels) {
    case 1: gather_blocks_kernel<1, T><<<grid, block, 0, s>>>(a.in, b, a.kw, a.kh, planes); break;
    case 3: gather_blocks_kernel<3, T><<<grid, block, 0, s>>>(a.in, b, a.kw, a.kh, planes); break;
    case 4: gather_blocks_kernel<4, T><<<grid, block, 0, s>>>(a.in, b, a.kw, a.kh, planes); break;
    default: throw Error(ErrorKind::InvalidArgument, "unsupported channel count");
  }
  TF_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void store_typed(const ConvArgs& a, const BlockBatch& b, int channels, const float* planes, cudaStream_t s) {
  dim3 grid = grid_for(b.block_w, b.block_h);
  grid.z = b.batch;
  const dim3 block(kBlockX, kBlockY);
  switch (channels) {
    case 1: store_blocks_kernel<1, T><<<grid, block, 0, s>>>(a.out, a.out_pitch, a.width, a.height, b, planes); break;
    case 3: store_blocks_kernel<3, T><<<grid, block, 0, s>>>(a.out, a.out_pitch, a.width, a.height, b, planes); break;
    case 4: store_blocks_kernel<4, T><<<grid, block, 0, s>>>(a.out, a.out_pitch, a.width, a.height, b, planes); break;
    default: throw Error(ErrorKind::InvalidArgument, "unsupported channel count");
  }
  TF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void gather_blocks(const ConvArgs& a, const BlockBatch& b, SampleType type, int channels, float* planes,
                   cudaStream_t stream) {
  switch (type) {
    case SampleType::U8: gather_typed<std::uint8_t>(a, b, channels, planes, stream); return;
    case SampleType::U16: gather_typed<std::uint16_t>(a, b, channels, planes, stream); return;
    case SampleType::F32: gather_typed<float>(a, b, channels, planes, stream); return;
  }
}

void store_blocks(const ConvArgs& a, const BlockBatch& b, SampleType type, int channels, const float* planes,
                  cudaStream_t stream) {
  if (a.width <= 0 || a.height <= 0) return;
  switch (type) {
    case SampleType::U8: store_typed<std::uint8_t>(a, b, channels, planes, stream); return;
    case SampleType::U16: store_typed<std::uint16_t>(a, b, channels, planes, stream); return;
    case SampleType::F32: store_typed<float>(a, b, channels, planes, stream); return;
  }
}

void multiply(float2* bins, const float2* kernel_bins, std::size_t n, int planes, cudaStream_t stream) {
  multiply_kernel<<<linear_blocks(n), 256, 0, stream>>>(bins, kernel_bins, n, planes);
  TF_CUDA_CHECK(cudaGetLastError());
}

void place_kernel(const float* taps, int kw, int kh, float* plane, int rows, int cols, cudaStream_t stream) {
  place_kernel_kernel<<<grid_for(cols, rows), dim3(kBlockX, kBlockY), 0, stream>>>(taps, kw, kh, plane, rows, cols);
  TF_CUDA_CHECK(cudaGetLastError());
}

void conj_scale(float2* bins, std::size_t n, float scale, cudaStream_t stream) {
  conj_scale_kernel<<<linear_blocks(n), 256, 0, stream>>>(bins, n, scale);
  TF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tf::cuda::fft
