// The CPU's FFT path for large 2-D kernels (docs/design.md, contract 2, "The FFT path"): its output
// against a float64 direct convolution of the same padded input, within the stated bound
// |y - y64| <= kFftBound * sum|k| * max|x| before quantization (so integer outputs are within one
// level of the rounded float64 result while that is below 1); the same bits whatever the tiles and
// the workers (the fixed grid of blocks); the choice depends on the kernel alone; --exact keeps the
// direct path's bits.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "fft_reference.hpp"
#include "naive_reference.hpp"
#include "test_support.hpp"
#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/engine/fft_blocks.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/io/codec.hpp"

namespace tf {
namespace {

using test::allowed;
using test::float64_reference;
using test::kFftBound;
using test::max_error;

Stage random_stage(int w, int h, unsigned seed, bool positive) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(positive ? 0.0 : -1.0, 1.0);
  std::vector<std::vector<double>> rows(h, std::vector<double>(w));
  for (auto& r : rows)
    for (auto& v : r) v = u(rng) / (w * h) * 4;
  Stage s;
  s.name = fmt::format("random{}x{}", w, h);
  s.convs.push_back(make_convolution(Kernel::from_rows(rows)));
  return s;
}

Image run(const Image& src, const Stage& stage, const Border& border, int tile, const char* devices,
          bool exact = false) {
  JobOptions o;
  o.border = border;
  o.schedule.tile = {tile, tile};
  o.exact = exact;
  return filter_image(src, {stage}, select_devices(devices).devices, o);
}

const BorderMode kModes[] = {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Constant,
                             BorderMode::Wrap};

void check_case(const Stage& stage, BorderMode mode, Format f, std::uint32_t seed, std::initializer_list<int> tiles) {
  SCOPED_TRACE(fmt::format("{} border={} {} seed {}", stage.name, to_string(mode), to_string(f), seed));
  ASSERT_TRUE(cpu::uses_fft(stage.convs[0]));
  const Image src = test::random_image(97, 61, f, seed);
  const Border border{mode, f.type == PixelType::F32 ? 0.25f : 77.0f};
  const test::FftReference ref = float64_reference(src, stage, border);
  const Image untiled = run(src, stage, border, 4096, "cpu:1");
  const double untiled_error = max_error(untiled, ref);
  EXPECT_LE(untiled_error, allowed(ref, f.type)) << "untiled; bound scale " << ref.scale;
  for (int tile : tiles) {
    const Image tiled = run(src, stage, border, tile, "cpu:3");
    EXPECT_LE(max_error(tiled, ref), allowed(ref, f.type)) << "tile " << tile;
    // Tiled = untiled bit for bit: the blocks are the grid's, whatever the tiles.
    EXPECT_TRUE(same_pixels(untiled.view(), tiled.view())) << "tile " << tile;
  }
}

TEST(Fft, WithinTheBoundOfAFloat64Reference63x63) {
  if (!cpu::fft_available()) GTEST_SKIP() << "built without FFTW";
  std::uint32_t seed = test::test_seed(31000);
  const Stage signed_k = random_stage(63, 63, 5, false), positive_k = random_stage(63, 63, 6, true);
  for (BorderMode mode : kModes)
    for (PixelType type : {PixelType::U8, PixelType::U16, PixelType::F32})
      for (int channels : {1, 3, 4}) {
        check_case(signed_k, mode, Format{type, channels}, seed++, {16});
        check_case(positive_k, mode, Format{type, channels}, seed++, {40});
      }
}

TEST(Fft, WithinTheBoundOfAFloat64Reference255x255) {
  if (!cpu::fft_available()) GTEST_SKIP() << "built without FFTW";
  std::uint32_t seed = test::test_seed(32000);
  const Stage k = random_stage(255, 255, 7, false);
  int channels = 1;
  for (BorderMode mode : kModes)
    for (PixelType type : {PixelType::U8, PixelType::U16, PixelType::F32}) {
      check_case(k, mode, Format{type, channels}, seed++, {32});
      channels = channels == 1 ? 3 : channels == 3 ? 4 : 1;
    }
}

// The choice is the kernel's alone: small, separable and box kernels stay direct; the bits of an
// FFT job do not depend on the number of workers (same tiles, same transforms).
TEST(Fft, TheChoiceDependsOnTheKernelOnly) {
  if (!cpu::fft_available()) GTEST_SKIP() << "built without FFTW";
  EXPECT_FALSE(cpu::uses_fft(random_stage(23, 23, 1, false).convs[0]));  // 529 taps: below the crossover
  EXPECT_TRUE(cpu::uses_fft(random_stage(25, 25, 1, false).convs[0]));
  EXPECT_TRUE(cpu::uses_fft(random_stage(1023, 1, 1, false).convs[0]) == false);  // one row: separable
  EXPECT_FALSE(cpu::uses_fft(parse_filter_spec("gaussian:sigma=40").convs[0]));
  EXPECT_FALSE(cpu::uses_fft(parse_filter_spec("box:radius=300").convs[0]));
  const Stage k = random_stage(101, 77, 9, false);
  const Image src = test::random_image(300, 211, Format{PixelType::U8, 3}, test::test_seed(33000));
  const Border border{BorderMode::Reflect101, 0};
  const Image one = run(src, k, border, 64, "cpu:1");
  EXPECT_TRUE(same_pixels(one.view(), run(src, k, border, 64, "cpu:4").view()));
}

// The grid of blocks is the kernel's and the image's: tiles never change it.
TEST(Fft, TheGridDependsOnTheKernelAndTheImage) {
  const Kernel k31 = random_stage(31, 31, 1, false).convs[0].kernel;
  const FftBlocks g = fft_blocks(k31, 8192, 8192);
  EXPECT_EQ(g.cols, 192);
  EXPECT_EQ(g.block_w, 162);
  EXPECT_EQ(g.rows, 192);
  EXPECT_EQ(fft_blocks(random_stage(255, 255, 1, false).convs[0].kernel, 8192, 8192).cols, 1536);
  // An axis the image fits in one block of is one block, transformed at the next even fast size
  // (130 -> 135 is odd -> 140).
  const FftBlocks small = fft_blocks(k31, 100, 8192);
  EXPECT_EQ(small.block_w, 100);
  EXPECT_EQ(small.cols, 140);
  EXPECT_EQ(small.block_h, 162);
  // Blocks meeting a rectangle, cut by the image's edges; the planes reach the blocks' inputs.
  const BlockSpan span = blocks_meeting(g, Rect{160, 0, 10, 500}, 1000, 400);
  EXPECT_EQ(span.x0, 0);
  EXPECT_EQ(span.x1, 2);
  EXPECT_EQ(span.y1, 3);
  EXPECT_EQ(block_rect(g, 6, 2, 1000, 400), (Rect{972, 324, 28, 76}));
  const Chain chain{random_stage(31, 31, 1, false)};
  EXPECT_EQ(stage_planes(chain, {true}, Rect{160, 0, 10, 300}, 1000, 400)[0], (Rect{-15, -15, 324 + 30, 324 + 30}));
  EXPECT_EQ(stage_planes(chain, {true}, Rect{972, 330, 28, 70}, 1000, 400)[0], (Rect{957, 309, 43 + 15, 91 + 15}));
  EXPECT_EQ(stage_planes(chain, {false}, Rect{160, 0, 10, 300}, 1000, 400)[0], (Rect{145, -15, 40, 330}));
}

// Kernel the jobs use: random, not separable, 25x25 to 63x63 (odd and non-square sizes).
Stage random_fft_stage(std::mt19937& rng) {
  std::uniform_int_distribution<int> side(25, 63);
  const int w = side(rng), h = std::max(25, side(rng));
  return random_stage(w, h, rng(), rng() % 2 == 0);
}

// The same bits whatever the tiles and the CPU workers (issue 35): random images (odd sizes, several
// blocks a side), random kernels, every border, u8/u16/f32, 1/3/4 channels.
TEST(Fft, SameBitsWhateverTheTilesAndWorkers) {
  if (!cpu::fft_available()) GTEST_SKIP() << "built without FFTW";
  std::uint32_t seed = test::test_seed(37000);
  std::mt19937 rng(seed);
  int channels = 1;
  for (BorderMode mode : kModes)
    for (PixelType type : {PixelType::U8, PixelType::U16, PixelType::F32}) {
      const Stage stage = random_fft_stage(rng);
      const Format f{type, channels};
      channels = channels == 1 ? 3 : channels == 3 ? 4 : 1;
      std::uniform_int_distribution<int> size(200, 520);
      const int w = size(rng) | 1, h = size(rng) | 1;
      SCOPED_TRACE(fmt::format("{} border={} {} {}x{} seed {}", stage.name, to_string(mode), to_string(f), w, h, seed));
      ASSERT_TRUE(cpu::uses_fft(stage.convs[0]));
      const Image src = test::random_image(w, h, f, seed++);
      const Border border{mode, type == PixelType::F32 ? 0.25f : 77.0f};
      const Image expected = run(src, stage, border, 4096, "cpu:1");
      for (int tile : {37, 100, 171, 256}) {
        EXPECT_TRUE(same_pixels(expected.view(), run(src, stage, border, tile, "cpu:1").view()))
            << "cpu:1 tile " << tile;
        EXPECT_TRUE(same_pixels(expected.view(), run(src, stage, border, tile, "cpu:3").view()))
            << "cpu:3 tile " << tile;
      }
      // Automatic tiles, which the scheduler sizes for the workers it has.
      JobOptions o;
      o.border = border;
      EXPECT_TRUE(same_pixels(expected.view(), filter_image(src, {stage}, select_devices("cpu:1").devices, o).view()));
      EXPECT_TRUE(same_pixels(expected.view(), filter_image(src, {stage}, select_devices("cpu:3").devices, o).view()));
    }
}

// A chain with an FFT stage between direct ones: the same bits whatever the tiles and workers.
TEST(Fft, ChainsKeepTheirBitsWhateverTheTiles) {
  if (!cpu::fft_available()) GTEST_SKIP() << "built without FFTW";
  const Chain chain{parse_filter_spec("box:radius=2"), random_stage(33, 29, 21, false), parse_filter_spec("sharpen")};
  for (BorderMode mode : {BorderMode::Reflect101, BorderMode::Constant, BorderMode::Wrap}) {
    SCOPED_TRACE(to_string(mode));
    const Image src = test::random_image(333, 251, Format{PixelType::U8, 3}, test::test_seed(38000));
    JobOptions o;
    o.border = {mode, 13.0f};
    o.schedule.tile = {4096, 4096};
    const Image expected = filter_image(src, chain, select_devices("cpu:1").devices, o);
    for (int tile : {45, 128}) {
      o.schedule.tile = {tile, tile};
      EXPECT_TRUE(same_pixels(expected.view(), filter_image(src, chain, select_devices("cpu:3").devices, o).view()))
          << "tile " << tile;
    }
  }
}

// --exact: the direct path, bit for bit the naive reference; without it the FFT path, within the bound.
TEST(Fft, ExactKeepsTheDirectBits) {
  const Stage k = random_stage(31, 29, 11, false);
  const Image src = test::random_image(83, 57, Format{PixelType::F32, 3}, test::test_seed(34000));
  const Border border{BorderMode::Reflect, 0};
  const Image expected = test::naive_filter(src, {k}, border);
  EXPECT_TRUE(same_pixels(expected.view(), run(src, k, border, 32, "cpu:2", true).view()));
  const test::FftReference ref = float64_reference(src, k, border);
  EXPECT_LE(max_error(run(src, k, border, 32, "cpu:2"), ref), allowed(ref, PixelType::F32));
}

// A stage through the FFT feeds the next stage like any other: a chain whose second stage takes the
// FFT equals that stage run on the first one's output (the same padded plane, so the same transform).
TEST(Fft, ChainsFeedTheNextStage) {
  if (!cpu::fft_available()) GTEST_SKIP() << "built without FFTW";
  const Stage box = parse_filter_spec("box:radius=1");
  const Stage k = random_stage(41, 41, 13, true);
  const Image src = test::random_image(150, 97, Format{PixelType::U8, 4}, test::test_seed(35000));
  JobOptions o;
  o.schedule.tile = {4096, 4096};
  const auto cpus = select_devices("cpu:2").devices;
  const Image first = filter_image(src, {box}, cpus, o);
  const Image second = filter_image(first, {k}, cpus, o);
  EXPECT_TRUE(same_pixels(second.view(), filter_image(src, {box, k}, cpus, o).view()));
  const test::FftReference ref = float64_reference(first, k, o.border);
  EXPECT_LE(max_error(second, ref), allowed(ref, PixelType::U8));
}

// The CLI's --exact: direct convolution, the bits of an exact job; without it the FFT path, within the bound.
TEST(Fft, CliExactFlag) {
  if (!cpu::fft_available()) GTEST_SKIP() << "built without FFTW";
  const test::TempDir dir;
  const std::string input = dir / "in.png", kernel = dir / "k.txt", output = dir / "out.png";
  const Image src = test::random_image(90, 70, Format{PixelType::U8, 3}, test::test_seed(36000));
  encode_file(input, src.view());
  const Stage k = random_stage(27, 27, 17, true);
  {
    std::ofstream f(kernel);
    for (int y = 0; y < 27; ++y)
      for (int x = 0; x < 27; ++x) f << fmt::format("{:.9g}{}", k.convs[0].kernel.at(x, y), x == 26 ? "\n" : " ");
  }
  const Stage loaded = parse_filter_spec("custom:file=" + kernel);
  ASSERT_EQ(loaded.convs[0].kernel.taps, k.convs[0].kernel.taps);
  std::string out;
  ASSERT_EQ(test::run_cli(
                fmt::format("apply {} {} -f custom:file={} --devices cpu:2 --exact -q", input, output, kernel), &out),
            0)
      << out;
  EXPECT_TRUE(same_pixels(decode_file(output).view(), run(src, loaded, {}, 32, "cpu:1", true).view()));
  ASSERT_EQ(test::run_cli(fmt::format("apply {} {} -f custom:file={} --devices cpu:2 -q", input, output, kernel), &out),
            0)
      << out;
  const test::FftReference ref = float64_reference(src, loaded, {});
  EXPECT_LE(max_error(decode_file(output), ref), allowed(ref, PixelType::U8));
}

}  // namespace
}  // namespace tf
