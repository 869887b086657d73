// The kernels' launch shapes (pure C++, runs without a GPU): within the shared-memory limit, sized
// by the kernels' own shared-memory layouts, and with grids that cover the region exactly, for
// every kernel kind, pixel format, odd region sizes and kernels up to 255 taps.
#ifdef TF_HAVE_CUDA
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conv/block_layout.hpp"
#include "conv/launch_shape.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {
namespace {

using conv::S;

const SampleType kTypes[] = {SampleType::U8, SampleType::U16, SampleType::F32};
const int kChannels[] = {1, 3, 4};
const std::pair<int, int> kRegions[] = {{1, 1}, {7, 3}, {33, 65}, {4097, 33}, {8192, 4096}, {100, 8192}};
const int kMultiprocessors[] = {0, 1, 132};

// The grid covers [0, extent) with blocks of `per_block`, and no block lies wholly outside.
void expect_covers(unsigned blocks, int per_block, int extent, const std::string& what) {
  EXPECT_GE(static_cast<long long>(blocks) * per_block, extent) << what;
  EXPECT_LT(static_cast<long long>(blocks - 1) * per_block, extent) << what;
}

void expect_common(const LaunchShape& s, const ConvProblem& p, const std::string& what) {
  EXPECT_EQ(s.problem.kind, p.kind) << what;
  EXPECT_EQ(s.block.x, static_cast<unsigned>(S::kThreads)) << what;
  EXPECT_EQ(s.block.y * s.block.z, 1u) << what;
  EXPECT_EQ(s.grid.z, 1u) << what;
  EXPECT_LE(s.shared_bytes, kMaxSharedPerBlock) << what;
  EXPECT_GE(s.blocks_per_multiprocessor, 1) << what;
  EXPECT_LE(s.blocks_per_multiprocessor, 4) << what;
  if (s.blocks_per_multiprocessor > 1)
    EXPECT_LE(s.blocks_per_multiprocessor * (s.shared_bytes + kSharedReservedPerBlock), kSharedPerMultiprocessor)
        << what;
  EXPECT_EQ(s.columns_per_thread * s.rows_per_thread * S::kThreads,
            p.kind == ConvKind::Separable ? S::kBlockWidth * S::kSepStepRows : S::kBlockWidth * S::kGeneralRows)
      << what << ": a block's threads compute one step of its outputs";
  expect_covers(s.grid.x, S::kBlockWidth, p.width, what + " columns");
  expect_covers(s.grid.y, s.rows_per_block, p.height, what + " rows");
  EXPECT_NE(describe(s).find("grid"), std::string::npos);
}

TEST(LaunchShape, SeparableFitsAndCovers) {
  const std::pair<int, int> kernels[] = {{1, 1}, {3, 3}, {9, 9}, {31, 31}, {63, 63}, {255, 1}, {1, 255}, {255, 255}};
  for (SampleType type : kTypes)
    for (int c : kChannels)
      for (auto [w, h] : kRegions)
        for (auto [kw, kh] : kernels)
          for (int sms : kMultiprocessors) {
            const ConvProblem p{ConvKind::Separable, type, c, w, h, kw, kh};
            const std::string what = "separable " + std::to_string(kw) + "x" + std::to_string(kh) + " x" +
                                     std::to_string(c) + " " + std::to_string(w) + "x" + std::to_string(h) + " on " +
                                     std::to_string(sms) + " SMs";
            const LaunchShape s = choose_launch_shape(p, sms);
            expect_common(s, p, what);
            EXPECT_TRUE(s.stage_rows == 8 || s.stage_rows == 16 || s.stage_rows == 32) << what;
            EXPECT_EQ(s.shared_bytes, conv::SepLayout(kw, kh, s.stage_rows).bytes(conv::staged_pixel_bytes(c), kw, kh))
                << what << ": the kernel's own layout";
            EXPECT_EQ(s.rows_per_block % S::kSepStepRows, 0) << what;
            EXPECT_GE(s.rows_per_block, 2 * kh) << what;
            EXPECT_GE(s.rows_per_block, 4 * (kh - 1)) << what << ": strips four times their ring rows";
          }
}

TEST(LaunchShape, GeneralFitsAndCovers) {
  const std::pair<int, int> kernels[] = {{1, 1}, {3, 3}, {9, 9}, {31, 31}, {63, 63}, {101, 101}, {1, 255}, {150, 7}};
  for (SampleType type : kTypes)
    for (int c : kChannels)
      for (auto [w, h] : kRegions)
        for (auto [kw, kh] : kernels) {
          const ConvProblem p{ConvKind::General, type, c, w, h, kw, kh};
          const std::string what = "2-D " + std::to_string(kw) + "x" + std::to_string(kh) + " x" + std::to_string(c) +
                                   " " + std::to_string(w) + "x" + std::to_string(h);
          const LaunchShape s = choose_launch_shape(p, 132);
          expect_common(s, p, what);
          EXPECT_GE(s.kernel_rows_per_chunk, 1) << what;
          EXPECT_LE(s.kernel_rows_per_chunk, kh) << what;
          EXPECT_EQ(s.rows_per_block, S::kGeneralRows) << what;
          const std::size_t px = conv::staged_pixel_bytes(c);
          EXPECT_EQ(s.shared_bytes, conv::GeneralLayout(kw, s.kernel_rows_per_chunk).bytes(px, kw))
              << what << ": the kernel's own layout";
        }
}

TEST(LaunchShape, SmallKernelsStageEverythingAtOnce) {
  // 9 taps: 32 staged rows for the separable kernel, all 9 kernel rows in one chunk for the 2-D one.
  const LaunchShape sep = separable_launch_shape({ConvKind::Separable, SampleType::U8, 4, 8192, 8192, 9, 9}, 132);
  EXPECT_EQ(sep.stage_rows, S::kSepStepRows);
  EXPECT_GE(sep.grid.x * sep.grid.y, 2u * 132) << "at least two waves";
  const LaunchShape gen = general_launch_shape({ConvKind::General, SampleType::U8, 4, 8192, 8192, 9, 9});
  EXPECT_EQ(gen.kernel_rows_per_chunk, 9);
  EXPECT_GE(gen.blocks_per_multiprocessor, 2);
}

TEST(LaunchShape, SeparableStripsMakeAboutTwelveWavesFrom4096Rows) {
  // One GPU's 8192 rows: about twelve waves of 352-row strips; a quarter of them on each of four GPUs (a
  // 2048-row band and its halo): about eight waves of 128-row strips, as before twelve waves were chosen
  // for tall images (docs/performance.md, GPU kernels).
  const int mps = 132;
  const LaunchShape tall = separable_launch_shape({ConvKind::Separable, SampleType::U8, 4, 8192, 8192, 9, 9}, mps);
  const LaunchShape band = separable_launch_shape({ConvKind::Separable, SampleType::U8, 4, 8192, 2056, 9, 9}, mps);
  const auto waves = [&](const LaunchShape& s) {
    return static_cast<double>(s.grid.x) * s.grid.y / (mps * s.blocks_per_multiprocessor);
  };
  EXPECT_GT(waves(tall), 11.0);
  EXPECT_LE(waves(tall), 12.5);
  EXPECT_GT(waves(band), 7.0);
  EXPECT_LE(waves(band), 8.5);
  EXPECT_EQ(tall.rows_per_block, 352);
  EXPECT_EQ(band.rows_per_block, 128);
}

TEST(LaunchShape, KernelsTooLargeForSharedMemoryAreALimitError) {
  try {
    general_launch_shape({ConvKind::General, SampleType::F32, 4, 64, 64, 400, 3});
    FAIL() << "a 400-wide 2-D kernel of float4 pixels cannot fit";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Limit) << e.what();
    EXPECT_NE(std::string(e.what()).find("400x3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(separable_launch_shape({ConvKind::Separable, SampleType::U8, 4, 64, 64, 2001, 2001}, 132), Error);
}

// Past 255 taps a side, or past what the fused kernels' shared memory holds, the wide path takes
// the convolution: one staged input row per block, so the largest kernels the filters allow fit.
TEST(LaunchShape, LargeKernelsTakeTheWidePath) {
  const ConvProblem problems[] = {{ConvKind::Separable, SampleType::F32, 4, 1000, 700, 4095, 4095},
                                  {ConvKind::Separable, SampleType::U8, 3, 16, 16, 3001, 3001},
                                  {ConvKind::Separable, SampleType::U16, 1, 333, 5, 257, 1},
                                  {ConvKind::General, SampleType::F32, 4, 64, 64, 400, 3},
                                  {ConvKind::General, SampleType::U8, 4, 1000, 70000, 1023, 1023}};
  for (const ConvProblem& p : problems) {
    const std::string what = fmt::format("{}x{} x{} {}x{}", p.kw, p.kh, p.channels, p.width, p.height);
    ASSERT_TRUE(uses_wide_path(p)) << what;
    const LaunchShape s = choose_launch_shape(p, 132);
    EXPECT_TRUE(s.wide) << what;
    EXPECT_LE(s.shared_bytes, kMaxSharedPerBlock) << what;
    EXPECT_GE(static_cast<long long>(s.grid.x) * S::kWideSpan, p.width) << what;
    EXPECT_LE(s.grid.y, 65535u) << what << ": rows past the grid are strided";
    if (p.kind == ConvKind::Separable) {
      const conv::WideColumnLayout L(p.kh, p.channels);
      EXPECT_GE(static_cast<long long>(s.column_grid.x) * L.rows, p.height) << what;
      EXPECT_GE(static_cast<long long>(s.column_grid.y) * L.columns, p.width) << what;
      EXPECT_EQ(s.column_block.x, static_cast<unsigned>(S::kWideColumnThreads)) << what;
      EXPECT_EQ(s.column_shared_bytes, L.bytes()) << what;
      EXPECT_LE(s.column_shared_bytes, kMaxSharedPerBlock) << what;
      EXPECT_GE(L.chunk, std::min(p.kh, 1024)) << what << ": kernels of up to 1024 taps stage in one chunk";
      EXPECT_GT(wide_intermediate_bytes(p), 0u) << what;
    } else {
      EXPECT_EQ(wide_intermediate_bytes(p), 0u) << what;
    }
    EXPECT_NE(describe(s).find("wide"), std::string::npos) << describe(s);
  }
  // Box sums: the row launch stages one row of integers, the column launch walks >= 256 and >= kh rows.
  for (const ConvProblem& p : {ConvProblem{ConvKind::BoxSum, SampleType::U8, 4, 1024, 1024, 4095, 4095},
                               ConvProblem{ConvKind::BoxSum, SampleType::U16, 1, 5, 3, 257, 257}}) {
    const LaunchShape s = choose_launch_shape(p, 132);
    EXPECT_LE(s.shared_bytes, kMaxSharedPerBlock);
    EXPECT_GE(s.rows_per_block, std::max(256, p.kh));
    EXPECT_GE(static_cast<long long>(s.column_grid.y) * s.rows_per_block, p.height);
    EXPECT_GT(wide_intermediate_bytes(p), 0u);
    EXPECT_NE(describe(s).find("box sums"), std::string::npos) << describe(s);
  }
  // Up to 255 taps the fused kernels keep what they fit.
  EXPECT_FALSE(uses_wide_path({ConvKind::Separable, SampleType::U8, 4, 64, 64, 255, 255}));
  EXPECT_FALSE(choose_launch_shape({ConvKind::General, SampleType::U8, 4, 64, 64, 31, 31}, 132).wide);
}

TEST(LaunchShape, EmptyRegionsLaunchNothing) {
  for (ConvKind kind : {ConvKind::Separable, ConvKind::General}) {
    const LaunchShape s = choose_launch_shape({kind, SampleType::U8, 4, 0, 100, 2001, 2001}, 132);
    EXPECT_EQ(s.grid.x * s.grid.y, 0u);
  }
}

}  // namespace
}  // namespace tf::cuda
#endif
