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

template <int C, typename T>
__global__ void gather_kernel(PlaneArgs in, int origin_x, int origin_y, int span_w, int span_h, float* planes, int rows,
                              int cols) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= cols || y >= rows) return;
  const std::size_t plane = static_cast<std::size_t>(rows) * cols, at = static_cast<std::size_t>(y) * cols + x;
  float v[C];
#pragma unroll
  for (int c = 0; c < C; ++c) v[c] = 0.0f;
  if (x < span_w && y < span_h) {
    const int mx = in.xmap[origin_x + x], my = in.ymap[origin_y + y];
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
#pragma unroll
  for (int c = 0; c < C; ++c) planes[c * plane + at] = v[c];
}

template <int C, typename T>
__global__ void store_kernel(void* out, std::size_t out_pitch, int width, int height, const float* planes, int rows,
                             int cols) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const std::size_t plane = static_cast<std::size_t>(rows) * cols, at = static_cast<std::size_t>(y) * cols + x;
  T* d = reinterpret_cast<T*>(static_cast<unsigned char*>(out) + static_cast<std::size_t>(y) * out_pitch) +
         static_cast<std::size_t>(x) * C;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const float v = planes[c * plane + at];
    if constexpr (sizeof(T) == 4) d[c] = v;
    else d[c] = static_cast<T>(conv::quantized_bits<T>(v) & (sizeof(T) == 1 ? 0xFFu : 0xFFFFu));
  }
}

__global__ void multiply_kernel(float2* bins, const float2* kernel_bins, std::size_t n, int channels) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float2 k = kernel_bins[i];
    for (int c = 0; c < channels; ++c) {
      float2& v = bins[c * n + i];
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
void gather_typed(const ConvArgs& a, int channels, float* planes, int rows, int cols, cudaStream_t s) {
  const int sw = a.width + a.kw - 1, sh = a.height + a.kh - 1;
  const dim3 grid = grid_for(cols, rows), block(kBlockX, kBlockY);
  switch (channels) {
    case 1: gather_kernel<1, T><<<grid, block, 0, s>>>(a.in, a.origin_x, a.origin_y, sw, sh, planes, rows, cols); break;
    case 3: gather_kernel<3, T><<<grid, block, 0, s>>>(a.in, a.origin_x, a.origin_y, sw, sh, planes, rows, cols); break;
    case 4: gather_kernel<4, T><<<grid, block, 0, s>>>(a.in, a.origin_x, a.origin_y, sw, sh, planes, rows, cols); break;
    default: throw Error(ErrorKind::InvalidArgument, "unsupported channel count");
  }
  TF_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void store_typed(const ConvArgs& a, int channels, const float* planes, int rows, int cols, cudaStream_t s) {
  const dim3 grid = grid_for(a.width, a.height), block(kBlockX, kBlockY);
  switch (channels) {
    case 1: store_kernel<1, T><<<grid, block, 0, s>>>(a.out, a.out_pitch, a.width, a.height, planes, rows, cols); break;
    case 3: store_kernel<3, T><<<grid, block, 0, s>>>(a.out, a.out_pitch, a.width, a.height, planes, rows, cols); break;
    case 4: store_kernel<4, T><<<grid, block, 0, s>>>(a.out, a.out_pitch, a.width, a.height, planes, rows, cols); break;
    default: throw Error(ErrorKind::InvalidArgument, "unsupported channel count");
  }
  TF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void gather(const ConvArgs& a, SampleType type, int channels, float* planes, int rows, int cols, cudaStream_t stream) {
  switch (type) {
    case SampleType::U8: gather_typed<std::uint8_t>(a, channels, planes, rows, cols, stream); return;
    case SampleType::U16: gather_typed<std::uint16_t>(a, channels, planes, rows, cols, stream); return;
    case SampleType::F32: gather_typed<float>(a, channels, planes, rows, cols, stream); return;
  }
}

void store(const ConvArgs& a, SampleType type, int channels, const float* planes, int rows, int cols,
           cudaStream_t stream) {
  if (a.width <= 0 || a.height <= 0) return;
  switch (type) {
    case SampleType::U8: store_typed<std::uint8_t>(a, channels, planes, rows, cols, stream); return;
    case SampleType::U16: store_typed<std::uint16_t>(a, channels, planes, rows, cols, stream); return;
    case SampleType::F32: store_typed<float>(a, channels, planes, rows, cols, stream); return;
  }
}

void multiply(float2* bins, const float2* kernel_bins, std::size_t n, int channels, cudaStream_t stream) {
  multiply_kernel<<<linear_blocks(n), 256, 0, stream>>>(bins, kernel_bins, n, channels);
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
