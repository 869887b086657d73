// How a convolution is launched, as a value: grid, block, dynamic shared memory and the per-block
// work the kernel is told about. Chosen on the host from the problem alone (kernel kind, pixel
// format, region and kernel size, multiprocessor count), without a device, so tests check it and
// `tilefilter bench --verbose` prints it; launch_conv() (conv_kernels.hpp) launches with it.
#pragma once
#include <cstddef>
#include <string>

#include <vector_types.h>

#include "conv_kernels.hpp"

namespace tf::cuda {

// BoxSum: a box_sum convolution (core's Convolution::box_sum) on integer samples: exact integer
// window sums, O(1) a pixel (conv/box_sum_kernel.cuh).
enum class ConvKind : int { Separable, General, BoxSum };

// One convolution over one output region: what its launch shape depends on.
struct ConvProblem {
  ConvKind kind = ConvKind::Separable;
  SampleType type = SampleType::U8;
  int channels = 4;
  int width = 0, height = 0;  // output region, pixels
  int kw = 1, kh = 1;         // kernel size (separable: row taps x column taps)
};

struct LaunchShape {
  ConvProblem problem;
  dim3 grid{0, 0, 1};
  dim3 block{KernelSchedule::kThreads, 1, 1};
  std::size_t shared_bytes = 0;       // dynamic shared memory per block, at most kMaxSharedPerBlock
  int blocks_per_multiprocessor = 0;  // residency the shape assumes (shared memory bounds it; registers allow 4)
  // Output pixels one thread computes at a time: separable 1 column x 8 rows (its column pass; the
  // row pass is 8 columns of one row), 2-D 8 columns x 2 rows.
  int columns_per_thread = 0, rows_per_thread = 0;
  // Output rows one block computes (grid.y blocks of them cover the region). Separable: a multiple
  // of kSepStepRows, at least 2 kh (each block recomputes kh - 1 intermediate rows); 2-D: kGeneralRows.
  int rows_per_block = 0;
  int stage_rows = 0;             // separable: input rows staged per chunk (fewer when shared memory is short)
  int kernel_rows_per_chunk = 0;  // 2-D: kernel rows staged at once (kh when they all fit)
  // The wide path (wide_launch_shape): grid and shared memory are those of the row launch (the
  // separable row pass into ConvArgs::inter, or the whole 2-D kernel); a separable one then runs its
  // column pass over `inter` with column_grid, column_block and column_shared_bytes. Box sums use
  // column_grid with `block` and no shared memory.
  bool wide = false;
  dim3 column_grid{0, 0, 1};
  dim3 column_block{KernelSchedule::kThreads, 1, 1};
  std::size_t column_shared_bytes = 0;
};

// True when a convolution takes the wide path: a side over KernelSchedule::kMaxFusedTaps taps, or
// a fused kernel that would not fit in shared memory.
bool uses_wide_path(const ConvProblem& problem);
// Rows the wide separable path's intermediate needs for a region `height` rows high (kh - 1 more,
// and one column-pass run of slack), and its bytes at `pitch`.
int wide_intermediate_rows(int height, int kh);
// Bytes of the intermediate of `problem` when it takes the wide separable path or is a BoxSum, else 0.
std::size_t wide_intermediate_bytes(const ConvProblem& problem);
std::size_t wide_intermediate_pitch(const ConvProblem& problem);

// The wide path's shape: a row-launch block of 128 threads computes KernelSchedule::kWideSpan
// outputs of one row; its shared memory holds one input row of kWideSpan + kw + 8 pixels, padded,
// and kw taps (at most 108 KiB for 4095 taps of float4), so any kernel up to kMaxSeparableTaps
// (separable) or kMaxKernelSide (2-D) fits. A separable one's column launch: blocks of
// kWideColumnThreads over tiles of WideColumnLayout (conv/block_layout.hpp), up to 227 KiB of
// shared memory. Grids are capped at 65535 rows; the kernels stride over the rest.
LaunchShape wide_launch_shape(const ConvProblem& problem);

// The separable kernel's shape: as many input rows staged at once as fit (32, else halved down to
// 8), and blocks that walk down column strips, each at least four times its kh - 1 ring rows, with
// enough of them for about twelve waves over `multiprocessors` (132 when unknown; eight waves below
// 4096 rows), so the last, partial wave costs little. Throws tf::Error (kind Limit) when the kernel
// does not fit in shared memory (never for kernels up to 255 taps).
LaunchShape separable_launch_shape(const ConvProblem& problem, int multiprocessors);

// The 2-D kernel's shape: as many kernel rows per chunk as leave room for two blocks per
// multiprocessor; when that is fewer than 16 (wide kernels), as many as fit in one block. Throws
// tf::Error (kind Limit) when not even one kernel row fits.
LaunchShape general_launch_shape(const ConvProblem& problem);

// The box_sum kernels' shape: the row launch as the wide path's (grid, shared memory for one staged
// row of integers and its prefix sums), then the column launch over column_grid, each thread
// walking rows_per_block rows (at least 256 and kh, so its first window's kh loads cost at most one
// per output).
LaunchShape box_sum_launch_shape(const ConvProblem& problem);

// One of the four above: BoxSum by kind, else the fused kernel by problem.kind, or the wide path
// when uses_wide_path().
// An empty region gets an empty grid (and never throws).
LaunchShape choose_launch_shape(const ConvProblem& problem, int multiprocessors);

// "separable 9x9 u8x4 8192x4096: grid 256x32x1 block 128, 41.4 KiB shared, 4 blocks/SM, 1x8 px per
// thread, 128 rows per block, 32 staged rows"
std::string describe(const LaunchShape& shape);

}  // namespace tf::cuda
