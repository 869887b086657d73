// Box blur on integer samples in O(1) a pixel (a box_sum convolution, docs/design.md contract 2):
// exact integer window sums, then one division. box_rows_kernel stages one input row of a
// kWideSpan-output segment through the maps as integers, prefix-sums it in shared memory (int32:
// at most (1024 + 4094) * 65535 < 2^31) and writes each output's row sum (a difference of two
// prefixes) to the int32 intermediate ConvArgs::inter; box_columns_kernel walks each column down a
// segment of rows with an int64 running sum and stores float(double(S) / (kw * kh)). Integer sums
// are exact in any order, so the bits equal the CPU's and the naive reference's. Shapes:
// box_sum_launch_shape() (launch_shape.hpp). Device code only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "conv/block_layout.hpp"
#include "conv/pixel_io.cuh"
#include "conv_kernels.hpp"

namespace tf::cuda::conv {

// Integer lanes of one staged pixel: 1, or 4 for three (padded) or four channels.
template <int C> constexpr int kBoxLanes = C == 1 ? 1 : 4;

template <int C> __device__ __forceinline__ void px_to_ints(const Px<C>& p, int* o) {
  if constexpr (C == 1) {
    o[0] = static_cast<int>(p);
  } else {
    o[0] = static_cast<int>(p.x);
    o[1] = static_cast<int>(p.y);
    o[2] = static_cast<int>(p.z);
    o[3] = static_cast<int>(p.w);
  }
}

// Row sums: block (bx, r) writes intermediate row r (plane row origin_y + r), region columns
// [kWideSpan bx, +kWideSpan), each the sum of the kw plane pixels of its window. Rows past the
// grid's are taken in strides of gridDim.y.
template <int C, typename T> __global__ void __launch_bounds__(S::kThreads) box_rows_kernel(const ConvArgs a) {
  constexpr int L = kBoxLanes<C>;
  extern __shared__ float4 smem4[];
  int* v = reinterpret_cast<int*>(smem4);  // staged pixels, then their inclusive prefix sums
  const int kw = a.kw;
  const int x0 = blockIdx.x * S::kWideSpan;
  const int span = min(S::kWideSpan, a.width - x0);
  const int staged = span + kw - 1;
  int* partial = v + static_cast<std::size_t>(S::kWideSpan + kw) * L;  // kThreads + 1 chunk offsets
  const int chunk = (staged + S::kThreads - 1) / S::kThreads;
  const int c0 = min(staged, static_cast<int>(threadIdx.x) * chunk), c1 = min(staged, c0 + chunk);
  const Raw<C, T> fill = fill_raw<C, T>(a.in.fill);
  for (int r = blockIdx.y; r < a.height + a.kh - 1; r += gridDim.y) {
    const int py = a.origin_y + r;
    const int by = py < a.in.height ? __ldg(a.in.ymap + py) : -1;
    const unsigned char* src =
        static_cast<const unsigned char*>(a.in.data) + (by >= 0 ? static_cast<std::size_t>(by) * a.in.pitch : 0);
    __syncthreads();  // the previous row's sums are written
    for (int i = threadIdx.x; i < staged; i += S::kThreads) {
      const int px = a.origin_x + x0 + i;
      const int bx = px < a.in.width ? __ldg(a.in.xmap + px) : -1;
      px_to_ints<C>(to_px<C, T>(by >= 0 && bx >= 0 ? load_raw<C, T>(src, bx) : fill), v + i * L);
    }
    __syncthreads();
    // Prefix sums: each thread its chunk, thread 0 the chunk offsets, each thread its chunk again.
    int sum[L];
#pragma unroll
    for (int l = 0; l < L; ++l) sum[l] = 0;
    for (int i = c0; i < c1; ++i)
#pragma unroll
      for (int l = 0; l < L; ++l) sum[l] += v[i * L + l];
#pragma unroll
    for (int l = 0; l < L; ++l) partial[threadIdx.x * L + l] = sum[l];
    __syncthreads();
    if (threadIdx.x == 0) {
      int run[L];
#pragma unroll
      for (int l = 0; l < L; ++l) run[l] = 0;
      for (int t = 0; t < S::kThreads; ++t)
#pragma unroll
        for (int l = 0; l < L; ++l) {
          const int own = partial[t * L + l];
          partial[t * L + l] = run[l];
          run[l] += own;
        }
    }
    __syncthreads();
#pragma unroll
    for (int l = 0; l < L; ++l) sum[l] = partial[threadIdx.x * L + l];
    for (int i = c0; i < c1; ++i)
#pragma unroll
      for (int l = 0; l < L; ++l) v[i * L + l] = sum[l] += v[i * L + l];
    __syncthreads();
    int* out =
        reinterpret_cast<int*>(static_cast<unsigned char*>(a.inter) + static_cast<std::size_t>(r) * a.inter_pitch);
    for (int x = threadIdx.x; x < span; x += S::kThreads)
#pragma unroll
      for (int l = 0; l < L; ++l) out[(x0 + x) * L + l] = v[(x + kw - 1) * L + l] - (x > 0 ? v[(x - 1) * L + l] : 0);
  }
}

// Column sums: thread (x, segment) walks rows [segment * rows_per_block, +rows_per_block) of
// region column x with an int64 running sum of kh row sums, storing each as the window's mean.
template <int C, typename T> __global__ void __launch_bounds__(S::kThreads) box_columns_kernel(const ConvArgs a) {
  constexpr int L = kBoxLanes<C>;
  const int x = blockIdx.x * S::kThreads + threadIdx.x;
  if (x >= a.width) return;
  const double area = static_cast<double>(a.kw) * a.kh;
  auto row = [&](int r) {
    return reinterpret_cast<const int*>(static_cast<const unsigned char*>(a.inter) +
                                        static_cast<std::size_t>(r) * a.inter_pitch) +
           static_cast<std::size_t>(x) * L;
  };
  for (int y0 = blockIdx.y * a.rows_per_block; y0 < a.height; y0 += gridDim.y * a.rows_per_block) {
    const int y1 = min(a.height, y0 + a.rows_per_block);
    long long s[L];
#pragma unroll
    for (int l = 0; l < L; ++l) s[l] = 0;
    for (int j = 0; j < a.kh; ++j) {
      const int* p = row(y0 + j);
#pragma unroll
      for (int l = 0; l < L; ++l) s[l] += p[l];
    }
    for (int y = y0; y < y1; ++y) {
      if (y > y0) {
        const int *enter = row(y + a.kh - 1), *leave = row(y - 1);
#pragma unroll
        for (int l = 0; l < L; ++l) s[l] += enter[l] - leave[l];
      }
      Px<C> m;
      if constexpr (C == 1) {
        m = static_cast<float>(static_cast<double>(s[0]) / area);
      } else {
        m = make_float4(
            static_cast<float>(static_cast<double>(s[0]) / area), static_cast<float>(static_cast<double>(s[1]) / area),
            static_cast<float>(static_cast<double>(s[2]) / area), static_cast<float>(static_cast<double>(s[3]) / area));
      }
      emit<C, T>(a, x, y, m);
    }
  }
}

}  // namespace tf::cuda::conv
