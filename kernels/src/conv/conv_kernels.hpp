// The convolution kernels as pure functions: each launch reads one stored buffer through border
// maps, runs one convolution over a rectangular region and writes that region. Everything a kernel
// needs travels by value in ConvArgs; how it is launched (grid, block, shared memory) is a value too,
// a LaunchShape chosen on the host (conv/launch_shape.hpp). The implementation lives in conv/, by
// level: pixel I/O and quantization, staging into shared memory, the sliding window, the two
// kernels, and launching.
//
// Arithmetic (docs/design.md, contract 2; the same as core/src/engine/cpu/convolve.cpp): float32
// accumulators starting at 0, one fmaf per tap in a fixed order (kx for a row pass, ky for a column
// pass, ky-major then kx for 2-D kernels), separable = row pass into a float32 intermediate then
// column pass, magnitude = sqrtf(fmaf(a, a, b*b)) with b*b rounded on its own, integer results
// rounded to nearest-even and saturated.
#pragma once
#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

namespace tf::cuda {

enum class SampleType : int { U8 = 0, U16 = 1, F32 = 2 };

// What a launch does with its results.
enum class Epilogue : int {
  Store,       // quantize (integer types) and store the pixel type
  StoreFloat,  // store the float32 result to `scratch` (first convolution of a magnitude stage)
  Magnitude,   // a = scratch, b = this result: store quantize(sqrtf(fmaf(a, a, b*b)))
  Sum,         // a = scratch, b = this result: store quantize(a + b) (one float32 add)
};

// The input "plane" of a convolution: positions (px, py), 0 <= px < width, 0 <= py < height, whose
// values are buffer[ymap[py]][xmap[px]], or `fill` where either map entry is -1. This is how border
// synthesis happens on the device (docs/design.md, contract 1): the maps are built on the host with
// border_index().
struct PlaneArgs {
  const void* data = nullptr;
  std::size_t pitch = 0;  // bytes between buffer rows
  const int* xmap = nullptr;
  const int* ymap = nullptr;
  int width = 0, height = 0;
  float fill = 0;
  // The longest spans where the maps are a plain shift (xmap[i] = i + x_shift for x_lo <= i < x_hi,
  // likewise y): blocks that stay inside them load without looking at the maps.
  int x_lo = 0, x_hi = 0, x_shift = 0, y_lo = 0, y_hi = 0, y_shift = 0;
};

struct ConvArgs {
  PlaneArgs in;
  // Output region, region-relative pixel (x, y) for 0 <= x < width, 0 <= y < height. Its window
  // starts at plane position (origin_x + x, origin_y + y).
  void* out = nullptr;
  std::size_t out_pitch = 0;
  float* scratch = nullptr;  // float pixels of `channels` samples, pitch scratch_pitch bytes
  std::size_t scratch_pitch = 0;
  int width = 0, height = 0;
  int origin_x = 0, origin_y = 0;
  int kw = 1, kh = 1;
  const float* taps = nullptr;  // separable: kw row taps then kh column taps; 2-D: kh rows of kw
  Epilogue epilogue = Epilogue::Store;
  int rows_per_block = 0;       // separable kernels: output rows one block walks down (launch_conv sets it)
  int taps_per_chunk_rows = 0;  // 2-D kernels: kernel rows staged at once (launch_conv sets it)
  // The wide separable path's float32 intermediate (row pass out, column pass in): row r holds plane
  // row origin_y + r for region columns [0, width), pixels of staged_pixel_bytes(channels); at least
  // wide_intermediate_rows(height, kh) rows (launch_shape.hpp).
  void* inter = nullptr;
  std::size_t inter_pitch = 0;
};

// The fixed part of the launch shapes. Both kernels run 128 threads; a thread owns 8 consecutive
// output pixels of a row (2-D: of two rows), each pixel a float4 (float for one channel), so every
// shared-memory load feeds 32-64 fused multiply-adds. Integer outputs are quantized (u8: 0..255,
// u16: 0..65535) in the epilogue, float ones stored as computed. What varies with the job (grid,
// shared bytes, rows per block) is chosen by choose_launch_shape(). Numbers measured on an H200 are
// in docs/performance.md.
struct KernelSchedule {
  static constexpr int kThreads = 128;
  static constexpr int kRun = 8;           // output pixels per thread along x
  static constexpr int kBlockWidth = 32;   // output pixels per block along x
  static constexpr int kSepStepRows = 32;  // separable: output rows per column-pass step
  static constexpr int kGeneralRows = 64;  // 2-D: output rows per block (2 per thread)
  // The wide path (kernels over 255 taps a side, or too wide for the fused kernels' shared memory):
  // a block computes kWideSpan consecutive outputs of one row (kRun per thread) from one staged input row.
  static constexpr int kWideSpan = kThreads * kRun;
  // Its column pass: 512 threads, a thread kRun rows of one column (conv/block_layout.hpp, WideColumnLayout).
  static constexpr int kWideColumnThreads = 512;
  static constexpr int kMaxFusedTaps = 255;
};

// Shared memory of a Hopper (sm_90) multiprocessor: 228 KiB, of which the runtime reserves 1 KiB
// for every resident block, so one block may opt in to at most 227 KiB. Every limit and occupancy
// estimate derives from these.
constexpr std::size_t kSharedPerMultiprocessor = 228 * 1024;
constexpr std::size_t kSharedReservedPerBlock = 1024;
constexpr std::size_t kMaxSharedPerBlock = kSharedPerMultiprocessor - kSharedReservedPerBlock;
constexpr std::size_t kSharedWithoutOptIn = 48 * 1024;  // more needs cudaFuncAttributeMaxDynamicSharedMemorySize

struct LaunchShape;  // conv/launch_shape.hpp

// Runs one convolution with `shape`, which choose_launch_shape() made for this same problem (kind,
// sample type, channels, region size, kernel size). Throws tf::Error (kind Device, through
// TF_CUDA_CHECK) when the launch fails, and (kind Internal) when shape and args disagree. An empty
// region launches nothing.
void launch_conv(const LaunchShape& shape, const ConvArgs& args, cudaStream_t stream);

// True when this build's kernels can run on the current device; otherwise *why says why (e.g. no
// kernel image for its architecture).
bool kernels_supported(std::string* why);

}  // namespace tf::cuda
