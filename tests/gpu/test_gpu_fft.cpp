// The GPU's FFT path (cuFFT) for large general 2-D kernels (docs/design.md, contract 2, "The FFT
// path"): within the CPU path's stated bound |y - y64| <= 1e-5 * sum|k| * max|x| of a float64 direct
// convolution of the same padded input, under every border (wrap on an image smaller than the
// kernel included), u8/u16/f32, 1/3/4 channels, tiles smaller than the halo; the same bits whatever
// the tiles, the GPUs and CPU workers beside them (the fixed grid of blocks); exact jobs stay GPU =
// CPU bit for bit; an FFT stage feeds a direct one like any stage. Not bit for bit the CPU's FFT
// (FFTW and cuFFT round differently). Without a GPU, cuFFT or FFTW every test skips.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>

#include <fmt/format.h>

#include "fft_reference.hpp"
#include "gpu_test_support.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/engine/fft_blocks.hpp"
#ifdef TF_HAVE_CUDA
#include "fft/fft_stage.hpp"
#endif

namespace tf::gputest {
namespace {

using test::allowed;
using test::float64_reference;
using test::kFftBound;
using test::max_error;
using test::sample;

const BorderMode kBorders[] = {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Constant,
                               BorderMode::Wrap};

bool cufft_built() {
#ifdef TF_HAVE_CUDA
  return cuda::fft_built();
#else
  return false;
#endif
}

#define TF_REQUIRE_GPU_FFT()                                                             \
  do {                                                                                   \
    TF_REQUIRE_GPU();                                                                    \
    if (!cufft_built()) GTEST_SKIP() << "built without cuFFT: GPUs convolve directly";   \
    if (!cpu::fft_available()) GTEST_SKIP() << "built without FFTW: no FFT path chosen"; \
  } while (0)

Border border_for(BorderMode m, PixelType t) { return Border{m, t == PixelType::F32 ? 0.25f : 77.0f}; }

Image on_gpu(const Image& src, const Chain& chain, const Border& border, int tile, bool exact = false) {
  JobOptions o;
  o.border = border;
  o.schedule.tile = {tile, tile};
  o.exact = exact;
  return run_on(src, chain, first_gpus(1), o);
}

// The largest |y - y64| / (sum|k| * max|x|) seen on float outputs (what docs/design.md quotes).
double worst_f32_ratio = 0;
void print_worst(const char* what) {
  std::printf("[fft] %s: largest float error %.3g * sum|k| * max|x| (bound %.0e)\n", what, worst_f32_ratio, kFftBound);
}

// The GPU's FFT result within the bound of the float64 reference for each tile size (0: automatic).
void check_case(const Stage& stage, BorderMode mode, Format f, int w, int h, std::uint32_t seed,
                std::initializer_list<int> tiles) {
  SCOPED_TRACE(fmt::format("{} seed {}", config(stage.name, mode, f, w, h), seed));
  ASSERT_TRUE(cpu::stage_uses_fft(stage));
  const Image src = test::random_image(w, h, f, seed);
  const Border border = border_for(mode, f.type);
  const test::FftReference ref = float64_reference(src, stage, border);
  for (int tile : tiles) {
    const Image out = on_gpu(src, {stage}, border, tile);
    const double error = max_error(out, ref);
    EXPECT_LE(error, allowed(ref, f.type)) << "tile " << tile << "; bound scale " << ref.scale;
    if (f.type == PixelType::F32) worst_f32_ratio = std::max(worst_f32_ratio, error / ref.scale);
    // The FFT path was taken: float outputs differ from the direct path's somewhere.
    if (f.type == PixelType::F32)
      EXPECT_FALSE(same_pixels(out.view(), on_gpu(src, {stage}, border, tile, true).view())) << "tile " << tile;
  }
}

TEST(GpuFft, WithinTheBoundOfAFloat64Reference63x63) {
  TF_REQUIRE_GPU_FFT();
  const Stage k = random_kernel_stage(63, 63, 41);
  std::uint32_t seed = test::test_seed(41000);
  for (BorderMode mode : kBorders)
    for (PixelType type : {PixelType::U8, PixelType::U16, PixelType::F32})
      for (int channels : {1, 3, 4})
        check_case(k, mode, Format{type, channels}, 97, 61, seed++, {0, 16});  // 16: smaller than the halo
  print_worst("63x63");
}

TEST(GpuFft, WithinTheBoundOfAFloat64Reference255x255) {
  TF_REQUIRE_GPU_FFT();
  const Stage k = random_kernel_stage(255, 255, 42);
  std::uint32_t seed = test::test_seed(42000);
  int channels = 1;
  for (BorderMode mode : kBorders)
    for (PixelType type : {PixelType::U8, PixelType::U16, PixelType::F32}) {
      check_case(k, mode, Format{type, channels}, 71, 53, seed++, {0, 40});
      channels = channels == 1 ? 3 : channels == 3 ? 4 : 1;
    }
  print_worst("63x63 and 255x255");
}

// Images smaller than the kernel: every border, wrap included (the halo wraps around the image
// several times), one tile and tiles of a few pixels.
TEST(GpuFft, ImagesSmallerThanTheKernel) {
  TF_REQUIRE_GPU_FFT();
  const Stage k255 = random_kernel_stage(255, 255, 43), k63 = random_kernel_stage(63, 63, 44);
  std::uint32_t seed = test::test_seed(43000);
  for (BorderMode mode : kBorders) {
    check_case(k255, mode, Format{PixelType::U8, 4}, 37, 23, seed++, {0, 8});
    check_case(k63, mode, Format{PixelType::F32, 3}, 13, 9, seed++, {0, 5});
    check_case(k63, mode, Format{PixelType::U16, 1}, 1, 1, seed++, {0});
  }
}

// Many tiles of a larger image, edge tiles of other transform sizes, in one job (several shapes,
// spectra and plans per lane at once).
TEST(GpuFft, ManyTiles) {
  TF_REQUIRE_GPU_FFT();
  const Stage k = random_kernel_stage(63, 63, 45);
  std::uint32_t seed = test::test_seed(44000);
  check_case(k, BorderMode::Reflect101, Format{PixelType::U8, 4}, 601, 403, seed++, {0, 128, 77});
  check_case(k, BorderMode::Wrap, Format{PixelType::F32, 1}, 333, 211, seed++, {100});
}

// Transforms of the automatic (large) tiles: a 255x255 kernel over a few 2048-pixel tiles, against
// the exact direct path on the same GPU (itself within a few float32 roundings of float64), within
// the bound of both: integers one level, floats twice the bound.
TEST(GpuFft, LargeTilesAgainstTheDirectPath) {
  TF_REQUIRE_GPU_FFT();
  const Stage k = random_kernel_stage(255, 255, 49);
  double sum_abs = 0;
  for (float t : k.convs[0].kernel.taps) sum_abs += std::abs(t);
  std::uint32_t seed = test::test_seed(47000);
  for (Format f : {Format{PixelType::U8, 4}, Format{PixelType::F32, 1}}) {
    SCOPED_TRACE(config(k.name, BorderMode::Reflect101, f, 2600, 2200));
    const Image src = test::random_image(2600, 2200, f, seed++);
    const Border border = border_for(BorderMode::Reflect101, f.type);
    double max_x = 0;
    const ImageView& v = src.view();
    for (int y = 0; y < v.height; ++y)
      for (int x = 0; x < v.width; ++x)
        for (int c = 0; c < f.channels; ++c) max_x = std::max(max_x, std::abs(sample(v, x, y, c)));
    const double bound = kFftBound * sum_abs * max_x;
    const test::Difference d =
        test::compare(on_gpu(src, {k}, border, 0, true).view(), on_gpu(src, {k}, border, 0).view());
    EXPECT_LE(d.max_abs, f.type == PixelType::F32 ? 2 * bound : std::floor(bound) + 1)
        << "at x=" << d.x << " y=" << d.y << " channel " << d.c << "; bound " << bound;
    std::printf("[fft] %s 2600x2200, 255x255, automatic tiles: max |FFT - direct| %.3g (bound %.3g)\n",
                to_string(f).c_str(), d.max_abs, bound);
  }
}

// Under a device-memory cap the FFT buffers (planes, spectra, cuFFT's work area) count against each
// lane: automatic tiles shrink until they fit, and the device holds no more than the cap.
TEST(GpuFft, DeviceMemoryCapShrinksTheTiles) {
  TF_REQUIRE_GPU_FFT();
  // 255 taps: blocks of 1282 transformed at 1536, about 140 MiB a lane for RGBA with a one-block tile;
  // the cap is shared by the GPU's six lanes, so each holds one block's tile; the image is 4 x 3 blocks.
  const std::size_t cap = 1ULL << 30;
  const DeviceSelection sel = select_devices("0", cap);
  const Stage k = random_kernel_stage(255, 255, 50);
  const Image src = test::random_image(4000, 3000, {PixelType::U8, 4}, test::test_seed(48000));
  JobOptions o;
  JobReport report;
  const Image out = run_on(src, {k}, sel.devices, o, &report);
  EXPECT_TRUE(report.failures.empty());
  for (const auto& f : report.failures) std::cout << "[fft] failure: " << f.message << "\n";
  EXPECT_GT(report.tiles, 4);
  EXPECT_LE(cuda::reserved_bytes(*sel.devices[0]), cap);
  double sum_abs = 0;
  for (float t : k.convs[0].kernel.taps) sum_abs += std::abs(t);
  const test::Difference d = test::compare(on_gpu(src, {k}, o.border, 0, true).view(), out.view());
  EXPECT_LE(d.max_abs, std::floor(kFftBound * sum_abs * 255) + 1);
  std::printf("[fft] cap %zu MiB: %d tiles of %dx%d, %zu MiB of device buffers\n", cap >> 20, report.tiles,
              report.tile.width, report.tile.height, cuda::reserved_bytes(*sel.devices[0]) >> 20);
}

#ifdef TF_HAVE_CUDA
// The GPU's crossover is its own (cuda::kGpuFftMinTaps, 31x31): a 27x27 kernel, which the CPU takes
// through FFTW, convolves directly on a GPU (the CPU's exact bits), a 31x31 one through cuFFT.
TEST(GpuFft, TheGpuCrossover) {
  TF_REQUIRE_GPU_FFT();
  const Stage below = random_kernel_stage(27, 27, 51), at = random_kernel_stage(31, 31, 52);
  ASSERT_TRUE(cpu::stage_uses_fft(below));
  EXPECT_FALSE(cuda::fft_stage(below));
  EXPECT_TRUE(cuda::fft_stage(at));
  const Image src = test::random_image(300, 200, Format{PixelType::F32, 3}, test::test_seed(49000));
  const Border border = border_for(BorderMode::Reflect101, PixelType::F32);
  EXPECT_TRUE(same_bits(cpu_reference(src, {below}, border), on_gpu(src, {below}, border, 0)));
  const Image fft = on_gpu(src, {at}, border, 0);
  EXPECT_FALSE(same_pixels(cpu_reference(src, {at}, border).view(), fft.view()));
  const test::FftReference ref = float64_reference(src, at, border);
  EXPECT_LE(max_error(fft, ref), allowed(ref, PixelType::F32));
}

// Transform sizes: the grid's (the kernel's and the image's, never a tile's), a fixed number of
// blocks per batch; the lane's buffer holds planes, spectra and the work area, each aligned.
TEST(GpuFft, TransformShapesAndLayout) {
  const FftBlocks grid = fft_blocks(random_kernel_stage(255, 255, 1).convs[0].kernel, 8192, 8192);
  const cuda::FftShape s = cuda::fft_shape(grid, 4);
  EXPECT_EQ(s.rows, 1536);
  EXPECT_EQ(s.cols, 1536);
  EXPECT_EQ(s.planes, 4 * cuda::fft_batch_blocks(grid, 4));
  EXPECT_GE(cuda::fft_batch_blocks(grid, 4), 1);
  // One block each way on a 97x61 image: 97 + 62 -> 160 columns, 61 + 62 -> 126 rows (even sizes
  // only: 125 would be the next fast size).
  const FftBlocks small = fft_blocks(random_kernel_stage(63, 63, 2).convs[0].kernel, 97, 61);
  EXPECT_EQ(small.cols, 160);
  EXPECT_EQ(small.rows, 126);
  const cuda::FftShape odd{125, 160, 3};
  const cuda::FftLayout l = cuda::fft_layout(odd, 1000);
  EXPECT_GE(l.bins, std::size_t{125} * 160 * 3 * sizeof(float));
  EXPECT_GE(l.work - l.bins, std::size_t{125} * 81 * 3 * 2 * sizeof(float));
  EXPECT_GE(l.total - l.work, std::size_t{1000});
  EXPECT_EQ(l.bins % 256, 0u);
  EXPECT_EQ(l.work % 256, 0u);
  EXPECT_EQ(cuda::fft_spectrum_bytes(odd), std::size_t{125} * 81 * 2 * sizeof(float));
}

// A normalized random kernel (not separable), so integer outputs stay mostly inside their range.
Stage normalized_kernel(int w, int h, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-0.5, 1.0);
  std::vector<std::vector<double>> rows(h, std::vector<double>(w));
  for (auto& r : rows)
    for (auto& v : r) v = u(rng) / (w * h) * 4;
  return kernel_stage(fmt::format("random{}x{}", w, h), rows);
}

// Issue 35: without --exact, the same bits whatever the tiles and the GPUs, and with CPU workers
// beside a GPU (they take no tile of an FFT job: its FFT stages run on one kind of backend). 30
// random cases: kernels 25x25..63x63 (GPUs convolve directly below 31x31, the same bits as the CPU's
// exact path then), every border, u8/u16/f32, 1/3/4 channels, odd sizes of several blocks a side.
// The CPU's FFTW result is within the bound of the GPU's, not its bits.
// Where two results differ: the first pixels, their grid blocks, and the count.
void print_differences(const Image& a, const Image& b, const Stage& k) {
  const FftBlocks grid = fft_blocks(k.convs[0].kernel, a.width(), a.height());
  std::cout << fmt::format("[gpu-fft]   {}x{} {}, grid block {}x{} transform {}x{} (rows x cols {}x{}), batch {}\n",
                           a.width(), a.height(), k.name, grid.block_w, grid.block_h, grid.cols, grid.rows, grid.rows,
                           grid.cols, cuda::fft_batch_blocks(grid, a.format().channels));
  int shown = 0, count = 0;
  const std::size_t ps = a.format().pixel_bytes(), ss = bytes_per_sample(a.format().type);
  for (int y = 0; y < a.height(); ++y)
    for (int x = 0; x < a.width(); ++x)
      for (int c = 0; c < a.format().channels; ++c) {
        const std::byte* pa = a.view().row(y) + x * ps + c * ss;
        const std::byte* pb = b.view().row(y) + x * ps + c * ss;
        if (std::memcmp(pa, pb, ss) == 0) continue;
        if (++count > 8) continue;
        std::cout << fmt::format("[gpu-fft]   ({}, {}) ch {} block ({}, {})\n", x, y, c, x / grid.block_w,
                                 y / grid.block_h);
      }
  std::cout << fmt::format("[gpu-fft]   {} samples differ\n", count);
}

TEST(GpuFft, SameBitsWhateverTheGpusTilesAndCpuWorkers) {
  TF_REQUIRE_GPU_FFT();
  std::uint32_t seed = test::test_seed(50000);
  std::mt19937 rng(seed);
  const auto one = first_gpus(1), two = first_gpus(2);
  std::vector<DevicePtr> with_cpus = one;
  for (const auto& d : select_devices("cpu:2").devices) with_cpus.push_back(d);
  const PixelType types[] = {PixelType::U8, PixelType::U16, PixelType::F32};
  int tile_differences = 0;
  for (int i = 0; i < 30; ++i) {
    std::uniform_int_distribution<int> side(25, 63), size(150, 700);
    const Stage k = normalized_kernel(side(rng), side(rng), rng);
    const BorderMode mode = kBorders[i % 5];
    const Format f{types[i % 3], i % 4 == 0 ? 1 : i % 4 == 1 ? 3 : 4};
    const int w = size(rng) | 1, h = size(rng) | 1;
    SCOPED_TRACE(fmt::format("case {}: {} seed {}", i, config(k.name, mode, f, w, h), seed));
    const Image src = test::random_image(w, h, f, seed++);
    JobOptions o;
    o.border = border_for(mode, f.type);
    const Image expected = run_on(src, {k}, one, o);
    EXPECT_TRUE(same_bits(expected, run_on(src, {k}, two, o))) << "two GPUs";
    JobReport report;
    EXPECT_TRUE(same_bits(expected, run_on(src, {k}, with_cpus, o, &report))) << "gpu0 + cpu:2";
    for (std::size_t d = 1; d < with_cpus.size(); ++d) EXPECT_EQ(report.tiles_per_device[d], 0) << "CPU worker " << d;
    // A --tile is rounded to whole blocks of the grid: the same bits as the automatic tiles. (With
    // odd one-block transform widths, 2 of these 180 runs differed by one level on an H100.)
    for (int tile : {64, 173, 500}) {
      o.schedule.tile = {tile, tile};
      for (const auto* devices : {&one, &two}) {
        const Image got = run_on(src, {k}, *devices, o);
        if (same_bits(expected, got)) continue;
        ++tile_differences;
        std::cout << fmt::format("[gpu-fft] case {} tile {} on {} GPU(s): not the automatic tiles' bits\n", i, tile,
                                 devices->size());
        print_differences(expected, got, k);
        EXPECT_TRUE(cuda::fft_stage(k)) << "the direct path must keep its bits, tile " << tile;
        if (cuda::fft_stage(k)) {
          const test::FftReference ref = float64_reference(src, k, o.border);
          EXPECT_LE(max_error(got, ref), allowed(ref, f.type)) << "tile " << tile;
        }
      }
    }
    o.schedule.tile = {};
    if (!cuda::fft_stage(k)) {  // below the GPU's crossover: the direct path, the CPU's exact bits
      o.exact = true;
      EXPECT_TRUE(same_bits(run_on(src, {k}, select_devices("cpu:2").devices, o), expected)) << "direct";
      continue;
    }
    const test::FftReference ref = float64_reference(src, k, o.border);
    EXPECT_LE(max_error(expected, ref), allowed(ref, f.type));
  }
  std::cout << fmt::format("[gpu-fft] {} of 180 runs with a --tile gave other bits than the automatic tiles\n",
                           tile_differences);
  EXPECT_EQ(tile_differences, 0);
}

// Automatic (large) tiles of an image of many blocks: one GPU = two GPUs = other tiles, 31x31 and
// 255x255 kernels.
TEST(GpuFft, SameBitsOverLargeImages) {
  TF_REQUIRE_GPU_FFT();
  std::mt19937 rng(test::test_seed(51000));
  for (int side : {31, 255}) {
    const Stage k = normalized_kernel(side, side, rng);
    const Image src = test::random_image(3001, 2203, Format{PixelType::U8, 4}, test::test_seed(51001));
    JobOptions o;
    SCOPED_TRACE(k.name);
    const Image expected = run_on(src, {k}, first_gpus(1), o);
    EXPECT_TRUE(same_bits(expected, run_on(src, {k}, first_gpus(2), o)));
    o.schedule.tile = {1000, 700};
    EXPECT_TRUE(same_bits(expected, run_on(src, {k}, first_gpus(2), o)));
  }
}
#endif

// exact = true: direct convolution on the GPU, bit for bit the CPU's (docs/design.md, contract 2).
TEST(GpuFft, ExactKeepsGpuEqualToCpuBitwise) {
  TF_REQUIRE_GPU();
  std::uint32_t seed = test::test_seed(45000);
  for (const Stage& k : {random_kernel_stage(63, 63, 46), random_kernel_stage(255, 255, 47)})
    for (BorderMode mode : {BorderMode::Reflect101, BorderMode::Wrap, BorderMode::Constant})
      for (Format f : {Format{PixelType::U8, 4}, Format{PixelType::U16, 1}, Format{PixelType::F32, 3}}) {
        const Image src = test::random_image(67, 45, f, seed++);
        const Border border = border_for(mode, f.type);
        ASSERT_TRUE(same_bits(cpu_reference(src, {k}, border), on_gpu(src, {k}, border, 24, true)))
            << config(k.name, mode, f, 67, 45);
      }
}

// An FFT stage feeds the next, direct, stage like any stage: with one tile the chain equals the
// direct stage run (exactly, on the CPU) over the FFT stage's own output, whose border is then
// synthesized from that output; with small tiles each stays within the bound of its reference.
TEST(GpuFft, ChainOfAnFftStageThenADirectStage) {
  TF_REQUIRE_GPU_FFT();
  const Stage k = random_kernel_stage(63, 63, 48);
  const Stage sharpen = parse_filter_spec("sharpen");
  std::uint32_t seed = test::test_seed(46000);
  for (BorderMode mode : kBorders)
    for (Format f : {Format{PixelType::U8, 3}, Format{PixelType::F32, 4}}) {
      SCOPED_TRACE(config("random63x63 | sharpen", mode, f, 91, 67));
      const Image src = test::random_image(91, 67, f, seed++);
      const Border border = border_for(mode, f.type);
      const Image first = on_gpu(src, {k}, border, 4096);
      const Image expected = cpu_reference(first, {sharpen}, border);
      EXPECT_TRUE(same_bits(expected, on_gpu(src, {k, sharpen}, border, 4096)));
      // Direct stage first, then the FFT: within the bound of the reference over the first output.
      const Image smoothed = cpu_reference(src, {sharpen}, border);
      const test::FftReference ref = float64_reference(smoothed, k, border);
      EXPECT_LE(max_error(on_gpu(src, {sharpen, k}, border, 4096), ref), allowed(ref, f.type));
      EXPECT_LE(max_error(on_gpu(src, {sharpen, k}, border, 20), ref), allowed(ref, f.type));
    }
}

}  // namespace
}  // namespace tf::gputest
