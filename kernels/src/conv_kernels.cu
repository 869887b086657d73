// Convolution kernels: a fused separable kernel (row pass into a shared-memory ring of float32 rows,
// column pass out of it, one block walking down a 32-pixel-wide column strip) and a general 2-D
// kernel (an input tile in shared memory, kernel rows staged in chunks so any size fits). Both read
// their input through the border maps of ConvArgs and quantize in their epilogue, so one launch
// does one whole convolution: global memory sees each input pixel about once and each output once.
//
// Registers: a thread owns 8 consecutive output pixels (a "run") and slides an 8-pixel window along
// the taps; the window is rotated by unrolling 8 steps, so every index is a compile-time constant
// and nothing goes to local memory. Each shared-memory load of a pixel feeds 32 (separable) or 64
// (2-D, two output rows) fused multiply-adds; taps are broadcast loads from shared memory.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "conv_kernels.hpp"
#include "tilefilter/error.hpp"

namespace tf::cuda {

namespace {

using S = KernelSchedule;
constexpr int R = S::run;

// A pixel in shared memory and registers: float for one channel, float4 for three (padded) or four.
template <int C> struct PxT { using type = float4; };
template <> struct PxT<1> { using type = float; };
template <int C> using Px = typename PxT<C>::type;

template <int C> __device__ __forceinline__ Px<C> splat(float v) {
  if constexpr (C == 1) return v;
  else return make_float4(v, v, v, C == 4 ? v : 0.0f);
}

// acc += v * t, per channel, as one fused multiply-add each (contract 2).
template <int C> __device__ __forceinline__ void fma_px(Px<C>& acc, const Px<C>& v, float t) {
  if constexpr (C == 1) {
    acc = fmaf(v, t, acc);
  } else {
    acc.x = fmaf(v.x, t, acc.x);
    acc.y = fmaf(v.y, t, acc.y);
    acc.z = fmaf(v.z, t, acc.z);
    if constexpr (C == 4) acc.w = fmaf(v.w, t, acc.w);
  }
}

template <int C> __device__ __forceinline__ float channel(const Px<C>& p, int c) {
  if constexpr (C == 1) return p;
  else return c == 0 ? p.x : c == 1 ? p.y : c == 2 ? p.z : p.w;
}

// Raw pixels as stored in a buffer, loaded with one vector access where alignment allows.
template <int C, typename T> struct Raw { T v[C]; };

template <int C, typename T>
__device__ __forceinline__ Raw<C, T> load_raw(const unsigned char* row, int x) {
  Raw<C, T> r;
  const T* p = reinterpret_cast<const T*>(row) + static_cast<std::size_t>(x) * C;
  if constexpr (C == 4 && sizeof(T) == 1) {
    const uchar4 u = __ldg(reinterpret_cast<const uchar4*>(p));
    r.v[0] = u.x; r.v[1] = u.y; r.v[2] = u.z; r.v[3] = u.w;
  } else if constexpr (C == 4 && sizeof(T) == 2) {
    const ushort4 u = __ldg(reinterpret_cast<const ushort4*>(p));
    r.v[0] = u.x; r.v[1] = u.y; r.v[2] = u.z; r.v[3] = u.w;
  } else if constexpr (C == 4) {
    const float4 u = __ldg(reinterpret_cast<const float4*>(p));
    r.v[0] = u.x; r.v[1] = u.y; r.v[2] = u.z; r.v[3] = u.w;
  } else {
#pragma unroll
    for (int c = 0; c < C; ++c) r.v[c] = __ldg(p + c);
  }
  return r;
}

template <int C, typename T> __device__ __forceinline__ Px<C> to_px(const Raw<C, T>& r) {
  if constexpr (C == 1) return static_cast<float>(r.v[0]);
  else
    return make_float4(static_cast<float>(r.v[0]), static_cast<float>(r.v[1]), static_cast<float>(r.v[2]),
                       C == 4 ? static_cast<float>(r.v[3]) : 0.0f);
}

// Round to nearest-even and saturate, written as core's std::min(std::max(std::rint(v), 0), hi).
__device__ __forceinline__ float quantize(float v, float hi) {
  v = rintf(v);
  v = v < 0.0f ? 0.0f : v;
  return hi < v ? hi : v;
}

template <typename T> __device__ __forceinline__ T to_sample(float v) {
  if constexpr (sizeof(T) == 1) return static_cast<T>(__float2uint_rz(v));
  else if constexpr (sizeof(T) == 2) return static_cast<T>(__float2uint_rz(v));
  else return v;
}

// The epilogue: what one output pixel becomes (see Epilogue).
template <int C, typename T>
__device__ __forceinline__ void emit(const ConvArgs& a, int x, int y, const Px<C>& v) {
  float o[C];
#pragma unroll
  for (int c = 0; c < C; ++c) o[c] = channel<C>(v, c);
  if (a.epilogue == Epilogue::StoreFloat) {
    float* s = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(a.scratch) + static_cast<std::size_t>(y) * a.scratch_pitch) +
               static_cast<std::size_t>(x) * C;
    if constexpr (C == 4) *reinterpret_cast<float4*>(s) = v;
    else
#pragma unroll
      for (int c = 0; c < C; ++c) s[c] = o[c];
    return;
  }
  if (a.epilogue == Epilogue::Magnitude) {
    const float* s = reinterpret_cast<const float*>(reinterpret_cast<const unsigned char*>(a.scratch) +
                                                    static_cast<std::size_t>(y) * a.scratch_pitch) +
                     static_cast<std::size_t>(x) * C;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const float first = s[c];
      o[c] = sqrtf(fmaf(first, first, __fmul_rn(o[c], o[c])));
    }
  }
  if (a.max_value > 0.0f) {
#pragma unroll
    for (int c = 0; c < C; ++c) o[c] = quantize(o[c], a.max_value);
  }
  T* d = reinterpret_cast<T*>(static_cast<unsigned char*>(a.out) + static_cast<std::size_t>(y) * a.out_pitch) +
         static_cast<std::size_t>(x) * C;
  if constexpr (C == 4 && sizeof(T) == 1) {
    *reinterpret_cast<uchar4*>(d) = make_uchar4(to_sample<T>(o[0]), to_sample<T>(o[1]), to_sample<T>(o[2]), to_sample<T>(o[3]));
  } else if constexpr (C == 4 && sizeof(T) == 2) {
    *reinterpret_cast<ushort4*>(d) = make_ushort4(to_sample<T>(o[0]), to_sample<T>(o[1]), to_sample<T>(o[2]), to_sample<T>(o[3]));
  } else if constexpr (C == 4) {
    *reinterpret_cast<float4*>(d) = make_float4(o[0], o[1], o[2], o[3]);
  } else {
#pragma unroll
    for (int c = 0; c < C; ++c) d[c] = to_sample<T>(o[c]);
  }
}

// Column c of a staged row is stored at c, or at c + c/8 for the 2-D kernel's padded layout (which
// keeps 8 lanes of two rows and four runs on distinct banks).
template <bool Pad> __device__ __forceinline__ int phys(int c) { return Pad ? c + (c >> 3) : c; }

// Copies plane rows [row0, row0 + rows) x the block's `cols` columns (their buffer columns in `sx`:
// >= 0 a column, -1 the fill value, -2 outside the plane) into shared memory as float pixels.
// Each warp takes 8 rows at a time so that 8 independent loads per thread are in flight.
template <int C, typename T, bool Pad>
__device__ __forceinline__ void stage_input(Px<C>* st, int sw, const int* sx, int rows, int cols, int row0,
                                           const ConvArgs& a) {
  constexpr int B = 8;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const unsigned char* base = static_cast<const unsigned char*>(a.in.data);
  const Px<C> fill = splat<C>(a.in.fill), zero = splat<C>(0.0f);
  for (int r0 = warp; r0 < rows; r0 += 4 * B) {
    int by[B];
#pragma unroll
    for (int b = 0; b < B; ++b) {
      const int r = r0 + 4 * b, pr = row0 + r;
      by[b] = r >= rows ? -3 : (pr >= 0 && pr < a.in.height) ? __ldg(a.in.ymap + pr) : -2;
    }
    for (int c = lane; c < cols; c += 32) {
      const int bx = sx[c];
      Raw<C, T> raw[B];
#pragma unroll
      for (int b = 0; b < B; ++b) {
        raw[b] = Raw<C, T>{};
        if (by[b] >= 0 && bx >= 0) raw[b] = load_raw<C, T>(base + static_cast<std::size_t>(by[b]) * a.in.pitch, bx);
      }
#pragma unroll
      for (int b = 0; b < B; ++b) {
        if (by[b] == -3) continue;
        Px<C> v;
        if (by[b] == -2 || bx == -2) v = zero;
        else if (by[b] == -1 || bx == -1) v = fill;
        else v = to_px<C, T>(raw[b]);
        st[(r0 + 4 * b) * sw + phys<Pad>(c)] = v;
      }
    }
  }
}

// The block's plane columns [col0, col0 + cols) mapped to buffer columns.
__device__ __forceinline__ void stage_columns(int* sx, int cols, int col0, const ConvArgs& a) {
  for (int c = threadIdx.x; c < cols; c += S::threads) {
    const int pc = col0 + c;
    sx[c] = pc >= 0 && pc < a.in.width ? __ldg(a.in.xmap + pc) : -2;
  }
}

// The sliding window: for i < R, acc0[i] += sum_k w(k + i) * t0[k] (and acc1 with t1), k = 0..K-1 in
// order. load(k, j) returns window element k + j for k a multiple of R and j < 2R - 1 (compile-time).
template <int C, bool Use0, bool Use1, class Load>
__device__ __forceinline__ void slide(Px<C> (&acc0)[R], Px<C> (&acc1)[R], int K, const float* t0, const float* t1,
                                      Load load) {
  Px<C> w[R];
#pragma unroll
  for (int j = 0; j < R - 1; ++j) w[j] = load(0, j);
  int k = 0;
  for (; k + R <= K; k += R) {
#pragma unroll
    for (int u = 0; u < R; ++u) {
      w[(u + R - 1) % R] = load(k, u + R - 1);
      if (Use0) {
        const float t = t0[k + u];
#pragma unroll
        for (int i = 0; i < R; ++i) fma_px<C>(acc0[i], w[(u + i) % R], t);
      }
      if (Use1) {
        const float t = t1[k + u];
#pragma unroll
        for (int i = 0; i < R; ++i) fma_px<C>(acc1[i], w[(u + i) % R], t);
      }
    }
  }
  if (k < K) {
#pragma unroll
    for (int u = 0; u < R; ++u) {
      if (k + u < K) {
        w[(u + R - 1) % R] = load(k, u + R - 1);
        if (Use0) {
          const float t = t0[k + u];
#pragma unroll
          for (int i = 0; i < R; ++i) fma_px<C>(acc0[i], w[(u + i) % R], t);
        }
        if (Use1) {
          const float t = t1[k + u];
#pragma unroll
          for (int i = 0; i < R; ++i) fma_px<C>(acc1[i], w[(u + i) % R], t);
        }
      }
    }
  }
}

struct SepLayout {
  int cols, sw, rb, stage_rows;
  static constexpr int ring_stride = S::block_width + 1;  // odd: row-pass stores of 8 rows hit distinct banks
  __host__ __device__ SepLayout(int kw, int kh, int stage) : cols(S::block_width + kw - 1), sw(cols | 1), rb(S::block_width + kh - 1), stage_rows(stage) {}
  __host__ __device__ std::size_t bytes(std::size_t px, int kw, int kh) const {
    return (static_cast<std::size_t>(stage_rows) * sw + static_cast<std::size_t>(rb) * ring_stride) * px +
           static_cast<std::size_t>(kw + kh + cols) * 4 + 16;
  }
};

// Separable convolution. Block (bx, seg) computes region columns [32 bx, 32 bx + 32) of rows
// [seg * rows_per_block, ...): a row pass over staged input rows fills a ring of float32 rows
// (tmp row g <-> plane row origin_y + g), and each 32-row step's column pass reads the ring.
template <int C, typename T>
__global__ void __launch_bounds__(S::threads) separable_kernel(const ConvArgs a, int stage_rows) {
  extern __shared__ float4 smem4[];
  const int kw = a.kw, kh = a.kh;
  const SepLayout L(kw, kh, stage_rows);
  Px<C>* st = reinterpret_cast<Px<C>*>(smem4);
  Px<C>* ring = st + static_cast<std::size_t>(L.stage_rows) * L.sw;
  float* taps = reinterpret_cast<float*>(ring + static_cast<std::size_t>(L.rb) * SepLayout::ring_stride);
  int* sx = reinterpret_cast<int*>(taps + kw + kh);

  const int bx = blockIdx.x * S::block_width;
  const int y_begin = blockIdx.y * a.rows_per_block;
  const int y_end = min(a.height, y_begin + a.rows_per_block);
  for (int i = threadIdx.x; i < kw + kh; i += S::threads) taps[i] = __ldg(a.taps + i);
  stage_columns(sx, L.cols, a.origin_x + bx, a);
  __syncthreads();

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rp_row = warp * 8 + (lane & 7), rp_x = (lane >> 3) * R;  // row pass: 8 rows a warp, 4 runs a row
  int next = y_begin;  // next tmp row to compute
  for (int y = y_begin; y < y_end; y += S::sep_step_rows) {
    const int need = min(y + S::sep_step_rows, y_end) + kh - 1;
    while (next < need) {
      const int n = min(L.stage_rows, need - next);
      stage_input<C, T, false>(st, L.sw, sx, n, L.cols, a.origin_y + next, a);
      __syncthreads();
      if (rp_row < n) {
        Px<C> acc[R];
#pragma unroll
        for (int i = 0; i < R; ++i) acc[i] = splat<C>(0.0f);
        const Px<C>* src = st + rp_row * L.sw + rp_x;
        slide<C, true, false>(acc, acc, kw, taps, taps, [src](int k, int j) { return src[k + j]; });
        Px<C>* dst = ring + ((next + rp_row) % L.rb) * SepLayout::ring_stride + rp_x;
#pragma unroll
        for (int i = 0; i < R; ++i) dst[i] = acc[i];
      }
      __syncthreads();
      next += n;
    }
    // Column pass: warp w computes rows y + 8w .. y + 8w + 7 at column `lane`.
    const int y0 = y + warp * R;
    if (y0 < y_end) {
      Px<C> acc[R];
#pragma unroll
      for (int i = 0; i < R; ++i) acc[i] = splat<C>(0.0f);
      const int rb = L.rb;
      const int s0 = y0 % rb;
      const Px<C>* col = ring + lane;
      slide<C, true, false>(acc, acc, kh, taps + kw, taps + kw, [col, s0, rb](int k, int j) {
        int s = s0 + (k % rb) + j;  // k % rb: k is a small multiple of 8, the modulo is uniform
        s = s >= rb ? s - rb : s;
        s = s >= rb ? s - rb : s;
        return col[s * SepLayout::ring_stride];
      });
      const int x = bx + lane;
      if (x < a.width) {
#pragma unroll
        for (int j = 0; j < R; ++j)
          if (y0 + j < y_end) emit<C, T>(a, x, y0 + j, acc[j]);
      }
    }
  }
}

struct GeneralLayout {
  int cols, sw, chunk;
  __host__ __device__ GeneralLayout(int kw, int chunk_rows) : cols(S::block_width + kw - 1), chunk(chunk_rows) {
    const int p = cols + (cols >> 3) + 1;
    sw = p + ((2 - (p & 3)) & 3);  // == 2 (mod 4): the two rows of a thread pair land 4 banks apart
  }
  __host__ __device__ int rows() const { return S::general_rows + chunk - 1; }
  __host__ __device__ std::size_t bytes(std::size_t px, int kw) const {
    return static_cast<std::size_t>(rows()) * sw * px + static_cast<std::size_t>(chunk) * kw * 4 + static_cast<std::size_t>(cols) * 4 + 16;
  }
};

// General 2-D convolution. Block (bx, by) computes region columns [32 bx, +32) x rows [64 by, +64);
// a thread computes a run of 8 pixels in two adjacent rows. Kernel rows are taken in chunks of
// `chunk` (all of them when they fit), so accumulators carry over between chunks in order.
template <int C, typename T>
__global__ void __launch_bounds__(S::threads) general_kernel(const ConvArgs a) {
  extern __shared__ float4 smem4[];
  const int kw = a.kw, kh = a.kh;
  const GeneralLayout L(kw, a.taps_per_chunk_rows);
  Px<C>* st = reinterpret_cast<Px<C>*>(smem4);
  float* taps = reinterpret_cast<float*>(st + static_cast<std::size_t>(L.rows()) * L.sw);
  int* sx = reinterpret_cast<int*>(taps + L.chunk * kw);

  const int bx = blockIdx.x * S::block_width, by = blockIdx.y * S::general_rows;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int tx = lane & 3, pair = warp * 8 + (lane >> 2);
  stage_columns(sx, L.cols, a.origin_x + bx, a);

  Px<C> acc0[R], acc1[R];
#pragma unroll
  for (int i = 0; i < R; ++i) acc0[i] = acc1[i] = splat<C>(0.0f);

  for (int ky0 = 0; ky0 < kh; ky0 += L.chunk) {
    const int kc = min(L.chunk, kh - ky0);
    __syncthreads();  // the previous chunk is done with st and taps (and sx is written)
    stage_input<C, T, true>(st, L.sw, sx, S::general_rows + kc - 1, L.cols, a.origin_y + by + ky0, a);
    for (int i = threadIdx.x; i < kc * kw; i += S::threads) taps[i] = __ldg(a.taps + static_cast<std::size_t>(ky0) * kw + i);
    __syncthreads();
    // Staged row 2*pair + q feeds output row 0 with kernel row q and output row 1 with row q - 1.
    const Px<C>* mine = st + 2 * pair * L.sw + 9 * tx;
    {
      const Px<C>* src = mine;
      slide<C, true, false>(acc0, acc1, kw, taps, taps, [src](int k, int j) { return src[(k + (k >> 3)) + (j + (j >> 3))]; });
    }
    for (int q = 1; q < kc; ++q) {
      const Px<C>* src = mine + q * L.sw;
      slide<C, true, true>(acc0, acc1, kw, taps + q * kw, taps + (q - 1) * kw,
                           [src](int k, int j) { return src[(k + (k >> 3)) + (j + (j >> 3))]; });
    }
    {
      const Px<C>* src = mine + kc * L.sw;
      slide<C, false, true>(acc0, acc1, kw, taps, taps + (kc - 1) * kw,
                            [src](int k, int j) { return src[(k + (k >> 3)) + (j + (j >> 3))]; });
    }
  }
  const int y = by + 2 * pair;
  const int x0 = bx + tx * R;
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int x = x0 + i;
    if (x >= a.width) break;
    if (y < a.height) emit<C, T>(a, x, y, acc0[i]);
    if (y + 1 < a.height) emit<C, T>(a, x, y + 1, acc1[i]);
  }
}

void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(ErrorKind::Device, std::string(what) + " at " + __FILE__ + ": " + cudaGetErrorString(e));
}

void set_shared(const void* kernel, std::size_t bytes) {
  if (bytes <= 48 * 1024) return;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e != cudaSuccess)
    throw Error(ErrorKind::Device, std::string("cudaFuncSetAttribute(MaxDynamicSharedMemorySize) at ") + __FILE__ + ": " +
                                       cudaGetErrorString(e));
}

int resident_blocks(std::size_t smem) {
  // Shared memory bounds residency; registers allow 4 blocks of 128 threads at <= 128 registers.
  const int by_smem = static_cast<int>((228 * 1024) / (smem + 1024));
  return by_smem < 1 ? 1 : by_smem > 4 ? 4 : by_smem;
}

template <int C, typename T>
void launch_separable_t(ConvArgs a, int multiprocessors, cudaStream_t stream) {
  constexpr std::size_t px = sizeof(Px<C>);
  int stage = S::sep_step_rows;
  std::size_t smem = SepLayout(a.kw, a.kh, stage).bytes(px, a.kw, a.kh);
  while (smem > S::shared_limit && stage > 8) {
    stage /= 2;
    smem = SepLayout(a.kw, a.kh, stage).bytes(px, a.kw, a.kh);
  }
  if (smem > S::shared_limit)
    throw Error(ErrorKind::Limit, "separable kernel " + std::to_string(a.kw) + "x" + std::to_string(a.kh) + " needs " +
                                      std::to_string(smem) + " bytes of shared memory");
  const int blocks_x = (a.width + S::block_width - 1) / S::block_width;
  // Enough blocks for two waves, but long column strips: each strip recomputes kh - 1 ring rows.
  const long long target = 2LL * (multiprocessors > 0 ? multiprocessors : 132) * resident_blocks(smem);
  const long long segs = (target + blocks_x - 1) / blocks_x;
  int rows = static_cast<int>((a.height + segs - 1) / segs);
  rows = rows < 2 * a.kh ? 2 * a.kh : rows;
  rows = (rows + S::sep_step_rows - 1) / S::sep_step_rows * S::sep_step_rows;
  a.rows_per_block = rows;
  const dim3 grid(blocks_x, (a.height + rows - 1) / rows);
  auto* kernel = &separable_kernel<C, T>;
  set_shared(reinterpret_cast<const void*>(kernel), smem);
  kernel<<<grid, S::threads, smem, stream>>>(a, stage);
  check_launch("separable_kernel<<<>>>");
}

template <int C, typename T>
void launch_general_t(ConvArgs a, cudaStream_t stream) {
  constexpr std::size_t px = sizeof(Px<C>);
  // The most kernel rows that leave room for two blocks per SM; when that is fewer than 16 (wide
  // kernels), one block per SM with as many rows as fit: re-staging 63 rows per chunk costs more
  // than the lost occupancy (each step has 64 independent FMAs to hide latency with).
  auto bytes = [&](int c) { return GeneralLayout(a.kw, c).bytes(px, a.kw); };
  auto most_rows = [&](std::size_t limit) {
    int c = a.kh;
    while (c > 1 && bytes(c) > limit) --c;
    return c;
  };
  int chunk = most_rows(S::shared_limit / 2 - 1024);
  if (chunk < std::min(a.kh, 16)) chunk = most_rows(S::shared_limit);
  const std::size_t smem = bytes(chunk);
  if (smem > S::shared_limit)
    throw Error(ErrorKind::Limit, "2-D kernel " + std::to_string(a.kw) + "x" + std::to_string(a.kh) + " needs " +
                                      std::to_string(smem) + " bytes of shared memory");
  a.taps_per_chunk_rows = chunk;
  const dim3 grid((a.width + S::block_width - 1) / S::block_width, (a.height + S::general_rows - 1) / S::general_rows);
  auto* kernel = &general_kernel<C, T>;
  set_shared(reinterpret_cast<const void*>(kernel), smem);
  kernel<<<grid, S::threads, smem, stream>>>(a);
  check_launch("general_kernel<<<>>>");
}

template <template <int, typename> class F, class... Args>
void dispatch(SampleType type, int channels, Args&&... args) {
  auto by_type = [&](auto tag) {
    using T = decltype(tag);
    switch (channels) {
      case 1: F<1, T>::run(args...); return;
      case 3: F<3, T>::run(args...); return;
      case 4: F<4, T>::run(args...); return;
    }
    throw Error(ErrorKind::InvalidArgument, "unsupported channel count " + std::to_string(channels));
  };
  switch (type) {
    case SampleType::U8: by_type(std::uint8_t{}); return;
    case SampleType::U16: by_type(std::uint16_t{}); return;
    case SampleType::F32: by_type(float{}); return;
  }
}

template <int C, typename T> struct SepRun {
  static void run(const ConvArgs& a, int sms, cudaStream_t s) { launch_separable_t<C, T>(a, sms, s); }
};
template <int C, typename T> struct GenRun {
  static void run(const ConvArgs& a, cudaStream_t s) { launch_general_t<C, T>(a, s); }
};

}  // namespace

bool kernels_supported(std::string* why) {
  cudaFuncAttributes attributes{};
  const cudaError_t e = cudaFuncGetAttributes(&attributes, separable_kernel<4, std::uint8_t>);
  if (e == cudaSuccess) return true;
  (void)cudaGetLastError();
  if (why) *why = std::string("cannot run this build's kernels: ") + cudaGetErrorString(e);
  return false;
}

void launch_separable(SampleType type, int channels, const ConvArgs& args, int multiprocessors, cudaStream_t stream) {
  if (args.width <= 0 || args.height <= 0) return;
  dispatch<SepRun>(type, channels, args, multiprocessors, stream);
}

void launch_general(SampleType type, int channels, const ConvArgs& args, cudaStream_t stream) {
  if (args.width <= 0 || args.height <= 0) return;
  dispatch<GenRun>(type, channels, args, stream);
}

}  // namespace tf::cuda
