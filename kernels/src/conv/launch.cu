// Launching: the type dispatch from (sample type, channels) to a kernel instantiation, the
// shared-memory opt-in, and the launch itself with a LaunchShape chosen on the host. Every CUDA
// call goes through TF_CUDA_CHECK (docs/design.md, contract 5).
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "conv/box_sum_kernel.cuh"
#include "conv/general_kernel.cuh"
#include "conv/launch_shape.hpp"
#include "conv/separable_kernel.cuh"
#include "conv/wide_kernel.cuh"
#include "conv_kernels.hpp"
#include "cuda/cuda_util.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {

namespace {

static_assert(sizeof(conv::Px<1>) == conv::staged_pixel_bytes(1) &&
                  sizeof(conv::Px<3>) == conv::staged_pixel_bytes(3) &&
                  sizeof(conv::Px<4>) == conv::staged_pixel_bytes(4),
              "launch_shape.cpp sizes shared memory with staged_pixel_bytes()");

// Lets `kernel` use more than the default 48 KiB of dynamic shared memory. The attribute holds for
// the kernel on the current device in every thread, and lanes of different tile shapes set it at
// once: one lowering it between another's setting and launch would fail that launch. So it only
// ever rises, to the most a launch has asked for on that device (a cap: each launch still gets
// the shared memory it asks for).
void allow_shared(const void* kernel, std::size_t bytes) {
  if (bytes <= kSharedWithoutOptIn) return;
  int device = 0;
  TF_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::map<std::pair<int, const void*>, std::size_t> allowed;
  std::lock_guard lock(mutex);
  std::size_t& most = allowed[{device, kernel}];
  if (bytes <= most) return;
  TF_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  most = bytes;
}

template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), const LaunchShape& shape, cudaStream_t stream, Args&&... args) {
  allow_shared(reinterpret_cast<const void*>(kernel), shape.shared_bytes);
  cudaLaunchConfig_t config{};
  config.gridDim = shape.grid;
  config.blockDim = shape.block;
  config.dynamicSmemBytes = shape.shared_bytes;
  config.stream = stream;
  TF_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

template <int C, typename T> void launch_typed(const LaunchShape& shape, ConvArgs a, cudaStream_t stream) {
  if (shape.problem.kind == ConvKind::BoxSum) {
    if constexpr (sizeof(T) == 4) {
      throw Error(ErrorKind::Internal, "box sums on float samples");
    } else {
      if (!a.inter) throw Error(ErrorKind::Internal, "box-sum launch without an intermediate buffer");
      launch(&conv::box_rows_kernel<C, T>, shape, stream, a);
      LaunchShape columns = shape;
      columns.grid = shape.column_grid;
      columns.shared_bytes = 0;
      a.rows_per_block = shape.rows_per_block;
      launch(&conv::box_columns_kernel<C, T>, columns, stream, a);
    }
    return;
  }
  if (shape.wide) {
    if (shape.problem.kind == ConvKind::General) {
      launch(&conv::wide_rows_kernel<C, T, true>, shape, stream, a);
      return;
    }
    if (!a.inter) throw Error(ErrorKind::Internal, "wide separable launch without an intermediate buffer");
    launch(&conv::wide_rows_kernel<C, T, false>, shape, stream, a);
    LaunchShape columns = shape;
    columns.grid = shape.column_grid;
    columns.block = shape.column_block;
    columns.shared_bytes = shape.column_shared_bytes;
    launch(&conv::wide_columns_kernel<C, T>, columns, stream, a);
    return;
  }
  if (shape.problem.kind == ConvKind::Separable) {
    a.rows_per_block = shape.rows_per_block;
    const int kw = shape.problem.kw, kh = shape.problem.kh;
    if (kw == 9 && kh == 9) launch(&conv::separable_kernel<C, T, 9, 9>, shape, stream, a, shape.stage_rows);
    else if (kw == 11 && kh == 11) launch(&conv::separable_kernel<C, T, 11, 11>, shape, stream, a, shape.stage_rows);
    else if (kw == 31 && kh == 31) launch(&conv::separable_kernel<C, T, 31, 31>, shape, stream, a, shape.stage_rows);
    else launch(&conv::separable_kernel<C, T, 0, 0>, shape, stream, a, shape.stage_rows);
  } else {
    a.taps_per_chunk_rows = shape.kernel_rows_per_chunk;
    if (shape.blocks_per_multiprocessor <= 2 && shape.problem.kw == 31)
      launch(&conv::general_kernel<C, T, 31, 2>, shape, stream, a);
    else if (shape.blocks_per_multiprocessor <= 2) launch(&conv::general_kernel<C, T, 0, 2>, shape, stream, a);
    else if (shape.problem.kw == 9) launch(&conv::general_kernel<C, T, 9, 4>, shape, stream, a);
    else launch(&conv::general_kernel<C, T, 0, 4>, shape, stream, a);
  }
}

template <typename T> void launch_channels(const LaunchShape& shape, const ConvArgs& a, cudaStream_t stream) {
  switch (shape.problem.channels) {
    case 1: launch_typed<1, T>(shape, a, stream); return;
    case 3: launch_typed<3, T>(shape, a, stream); return;
    case 4: launch_typed<4, T>(shape, a, stream); return;
  }
  throw Error(ErrorKind::InvalidArgument, fmt::format("unsupported channel count {}", shape.problem.channels));
}

}  // namespace

bool kernels_supported(std::string* why) {
  cudaFuncAttributes attributes{};
  const cudaError_t e = cudaFuncGetAttributes(&attributes, conv::separable_kernel<4, std::uint8_t, 0, 0>);
  if (e == cudaSuccess) return true;
  (void)cudaGetLastError();
  if (why) *why = std::string("cannot run this build's kernels: ") + cudaGetErrorString(e);
  return false;
}

void launch_conv(const LaunchShape& shape, const ConvArgs& args, cudaStream_t stream) {
  const ConvProblem& p = shape.problem;
  if (p.width != args.width || p.height != args.height || p.kw != args.kw || p.kh != args.kh)
    throw Error(ErrorKind::Internal,
                fmt::format("launch shape for {}x{} (kernel {}x{}) used for {}x{} (kernel {}x{})", p.width, p.height,
                            p.kw, p.kh, args.width, args.height, args.kw, args.kh));
  if (args.width <= 0 || args.height <= 0) return;
  switch (p.type) {
    case SampleType::U8: launch_channels<std::uint8_t>(shape, args, stream); return;
    case SampleType::U16: launch_channels<std::uint16_t>(shape, args, stream); return;
    case SampleType::F32: launch_channels<float>(shape, args, stream); return;
  }
}

}  // namespace tf::cuda
