// Launch-shape choice: host code only, no CUDA runtime call (tests run it without a GPU).
#include "conv/launch_shape.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "conv/block_layout.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {

namespace {

using conv::kRun;
using conv::S;

bool is_empty(const ConvProblem& p) { return p.width <= 0 || p.height <= 0; }

LaunchShape empty_shape(const ConvProblem& p) {
  LaunchShape s;
  s.problem = p;
  return s;
}

// Blocks of `shared_bytes` that one multiprocessor holds at once: shared memory bounds it, and
// registers allow 4 blocks of 128 threads at <= 128 registers (the kernels' __launch_bounds__).
int resident_blocks(std::size_t shared_bytes) {
  const int by_shared = static_cast<int>(kSharedPerMultiprocessor / (shared_bytes + kSharedReservedPerBlock));
  return std::clamp(by_shared, 1, 4);
}

std::string kernel_size(const ConvProblem& p) { return fmt::format("{}x{}", p.kw, p.kh); }

}  // namespace

LaunchShape separable_launch_shape(const ConvProblem& p, int multiprocessors) {
  if (is_empty(p)) return empty_shape(p);
  const std::size_t px = conv::staged_pixel_bytes(p.channels);
  int stage = S::kSepStepRows;
  std::size_t shared = conv::SepLayout(p.kw, p.kh, stage).bytes(px, p.kw, p.kh);
  while (shared > kMaxSharedPerBlock && stage > 8) {
    stage /= 2;
    shared = conv::SepLayout(p.kw, p.kh, stage).bytes(px, p.kw, p.kh);
  }
  if (shared > kMaxSharedPerBlock)
    throw Error(ErrorKind::Limit,
                fmt::format("separable kernel {} needs {} bytes of shared memory", kernel_size(p), shared));
  LaunchShape s;
  s.problem = p;
  s.shared_bytes = shared;
  s.blocks_per_multiprocessor = resident_blocks(shared);
  s.columns_per_thread = 1;
  s.rows_per_thread = conv::kRun;
  s.stage_rows = stage;
  const int blocks_x = (p.width + S::kBlockWidth - 1) / S::kBlockWidth;
  // About twelve waves of blocks for images of 4096 rows or more, eight below, in strips at least
  // four times the kh - 1 ring rows each strip recomputes. With two waves (the choice until issue
  // 14), 8192 rows of 9 taps made 1280 blocks for 528 slots, and the third wave ran 40% full (512
  // rows a block instead of 1664: 118 -> 131 Gpix/s on an H200). 8192^2 RGBA8 on one H200
  // (2026-11-28, two rounds), 8 / 12 / 16 / 24 / 32 waves: 9 taps 167 / 174 / 173 / 173 / 168
  // Gpix/s, 11 taps 144 / 149 / 148 / 147 / 144, 31 taps 70.9 / 72.0 / 72.2 / 71.5 / 70.7; a quarter
  // of it on each of four GPUs (2048 rows) ran 2-4% slower with twelve waves' strips than with
  // eight's.
  const long long waves = p.height >= 4096 ? 12 : 8;
  const long long target = waves * (multiprocessors > 0 ? multiprocessors : 132) * s.blocks_per_multiprocessor;
  const long long segments = (target + blocks_x - 1) / blocks_x;
  int rows = static_cast<int>((p.height + segments - 1) / segments);
  rows = std::max({rows, 2 * p.kh, 4 * (p.kh - 1)});
  rows = (rows + S::kSepStepRows - 1) / S::kSepStepRows * S::kSepStepRows;
  s.rows_per_block = rows;
  s.grid = dim3(blocks_x, (p.height + rows - 1) / rows, 1);
  return s;
}

LaunchShape general_launch_shape(const ConvProblem& p) {
  if (is_empty(p)) return empty_shape(p);
  const std::size_t px = conv::staged_pixel_bytes(p.channels);
  // The most kernel rows that leave room for two blocks per SM; when that is fewer than 16 (wide
  // kernels), one block per SM with as many rows as fit: re-staging 63 rows per chunk costs more
  // than the lost occupancy (each step has 64 independent FMAs to hide latency with).
  auto bytes = [&](int c) { return conv::GeneralLayout(p.kw, c).bytes(px, p.kw); };
  auto most_rows = [&](std::size_t limit) {
    int c = p.kh;
    while (c > 1 && bytes(c) > limit) --c;
    return c;
  };
  int chunk = most_rows(kMaxSharedPerBlock / 2 - kSharedReservedPerBlock);
  if (chunk < std::min(p.kh, 16)) chunk = most_rows(kMaxSharedPerBlock);
  const std::size_t shared = bytes(chunk);
  if (shared > kMaxSharedPerBlock)
    throw Error(ErrorKind::Limit, fmt::format("2-D kernel {} needs {} bytes of shared memory", kernel_size(p), shared));
  LaunchShape s;
  s.problem = p;
  s.shared_bytes = shared;
  s.blocks_per_multiprocessor = resident_blocks(shared);
  s.columns_per_thread = conv::kRun;
  s.rows_per_thread = 2;
  s.rows_per_block = S::kGeneralRows;
  s.kernel_rows_per_chunk = chunk;
  s.grid = dim3((p.width + S::kBlockWidth - 1) / S::kBlockWidth, (p.height + S::kGeneralRows - 1) / S::kGeneralRows, 1);
  return s;
}

namespace {

std::size_t wide_shared_bytes(const ConvProblem& p) {
  return conv::WideRowLayout::bytes(conv::staged_pixel_bytes(p.channels), p.kw);
}

constexpr unsigned kMaxGridRows = 65535;

}  // namespace

bool uses_wide_path(const ConvProblem& p) {
  if (p.kw > S::kMaxFusedTaps || p.kh > S::kMaxFusedTaps) return true;
  const std::size_t px = conv::staged_pixel_bytes(p.channels);
  if (p.kind == ConvKind::Separable) return conv::SepLayout(p.kw, p.kh, 8).bytes(px, p.kw, p.kh) > kMaxSharedPerBlock;
  return conv::GeneralLayout(p.kw, 1).bytes(px, p.kw) > kMaxSharedPerBlock;
}

int wide_intermediate_rows(int height, int kh) { return height + kh - 1 + kRun; }

std::size_t wide_intermediate_pitch(const ConvProblem& p) {
  const std::size_t row = static_cast<std::size_t>(std::max(p.width, 1)) * conv::staged_pixel_bytes(p.channels);
  return (row + 127) / 128 * 128;
}

std::size_t wide_intermediate_bytes(const ConvProblem& p) {
  if (is_empty(p) || p.kind == ConvKind::General || (p.kind == ConvKind::Separable && !uses_wide_path(p))) return 0;
  return wide_intermediate_pitch(p) * static_cast<std::size_t>(wide_intermediate_rows(p.height, p.kh));
}

LaunchShape wide_launch_shape(const ConvProblem& p) {
  if (is_empty(p)) return empty_shape(p);
  LaunchShape s;
  s.problem = p;
  s.wide = true;
  s.shared_bytes = wide_shared_bytes(p);
  if (s.shared_bytes > kMaxSharedPerBlock)
    throw Error(ErrorKind::Limit, fmt::format("kernel {} is too wide for one staged row ({} bytes of shared memory)",
                                              kernel_size(p), s.shared_bytes));
  s.blocks_per_multiprocessor = resident_blocks(s.shared_bytes);
  s.columns_per_thread = conv::kRun;
  s.rows_per_thread = 1;
  s.rows_per_block = 1;
  const unsigned blocks_x = static_cast<unsigned>((p.width + S::kWideSpan - 1) / S::kWideSpan);
  const int rows = p.kind == ConvKind::Separable ? p.height + p.kh - 1 : p.height;  // row pass: every plane row
  s.grid = dim3(blocks_x, std::min(static_cast<unsigned>(rows), kMaxGridRows), 1);
  if (p.kind == ConvKind::Separable) {
    const conv::WideColumnLayout L(p.kh, p.channels);
    const unsigned strips = static_cast<unsigned>((p.width + L.columns - 1) / L.columns);
    s.column_grid = dim3(static_cast<unsigned>((p.height + L.rows - 1) / L.rows), std::min(strips, kMaxGridRows), 1);
    s.column_block = dim3(S::kWideColumnThreads, 1, 1);
    s.column_shared_bytes = L.bytes();
  }
  return s;
}

LaunchShape box_sum_launch_shape(const ConvProblem& p) {
  if (is_empty(p)) return empty_shape(p);
  LaunchShape s;
  s.problem = p;
  s.wide = true;
  s.shared_bytes = static_cast<std::size_t>(S::kWideSpan + p.kw + S::kThreads) * conv::staged_pixel_bytes(p.channels);
  if (s.shared_bytes > kMaxSharedPerBlock)
    throw Error(ErrorKind::Limit, fmt::format("box {} is too wide for one staged row", kernel_size(p)));
  s.blocks_per_multiprocessor = resident_blocks(s.shared_bytes);
  s.columns_per_thread = 1;
  s.rows_per_thread = std::max(256, p.kh);
  s.rows_per_block = s.rows_per_thread;
  const unsigned blocks_x = static_cast<unsigned>((p.width + S::kWideSpan - 1) / S::kWideSpan);
  s.grid = dim3(blocks_x, std::min(static_cast<unsigned>(p.height + p.kh - 1), kMaxGridRows), 1);
  const unsigned segments = static_cast<unsigned>((p.height + s.rows_per_block - 1) / s.rows_per_block);
  s.column_grid =
      dim3(static_cast<unsigned>((p.width + S::kThreads - 1) / S::kThreads), std::min(segments, kMaxGridRows), 1);
  return s;
}

LaunchShape choose_launch_shape(const ConvProblem& p, int multiprocessors) {
  if (is_empty(p)) return empty_shape(p);
  if (p.kind == ConvKind::BoxSum) return box_sum_launch_shape(p);
  if (uses_wide_path(p)) return wide_launch_shape(p);
  return p.kind == ConvKind::Separable ? separable_launch_shape(p, multiprocessors) : general_launch_shape(p);
}

std::string describe(const LaunchShape& s) {
  const ConvProblem& p = s.problem;
  const char* type = p.type == SampleType::U8 ? "u8" : p.type == SampleType::U16 ? "u16" : "f32";
  std::string text = fmt::format(
      "{} {} {}x{} {}x{}: grid {}x{}x{} block {}, {:.1f} KiB shared, {} blocks/SM, {}x{} px per thread, "
      "{} rows per block",
      p.kind == ConvKind::Separable ? "separable"
      : p.kind == ConvKind::General ? "2-D"
                                    : "box",
      kernel_size(p), type, p.channels, p.width, p.height, s.grid.x, s.grid.y, s.grid.z, s.block.x,
      static_cast<double>(s.shared_bytes) / 1024, s.blocks_per_multiprocessor, s.columns_per_thread, s.rows_per_thread,
      s.rows_per_block);
  if (p.kind == ConvKind::BoxSum)
    text += fmt::format(", box sums: integer row prefix sums then column running sums (grid {}x{})", s.column_grid.x,
                        s.column_grid.y);
  else if (s.wide)
    text +=
        p.kind == ConvKind::Separable
            ? fmt::format(", wide: row pass then column pass (grid {}x{} block {}, {:.1f} KiB shared)", s.column_grid.x,
                          s.column_grid.y, s.column_block.x, static_cast<double>(s.column_shared_bytes) / 1024)
            : std::string(", wide: one staged row per kernel row");
  else if (p.kind == ConvKind::Separable) text += fmt::format(", {} staged rows", s.stage_rows);
  else text += fmt::format(", {} of {} kernel rows per chunk", s.kernel_rows_per_chunk, p.kh);
  return text;
}

}  // namespace tf::cuda
