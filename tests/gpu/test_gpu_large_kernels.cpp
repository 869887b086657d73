// Large kernels (issue 12) on the GPU = the CPU backend, bit for bit: halos larger than the tile
// (tile 16 under radius 42 and more), images smaller than the kernel under every border mode (wrap
// included), the wide path (kernels over 255 taps a side: the separable row and column passes
// through a float32 intermediate, 2-D kernels one staged row per kernel row), unsharp past the 2-D
// radius (a sum of two convolutions), and a multi-tile image under sigma 150. Without a GPU every
// test skips with CUDA's reason.
#include <fmt/format.h>

#include "gpu_test_support.hpp"
#include "naive_reference.hpp"

namespace tf::gputest {
namespace {

const BorderMode kBorders[] = {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Constant,
                               BorderMode::Wrap};

Border border_for(BorderMode m) { return Border{m, m == BorderMode::Constant ? 77.6f : 0.0f}; }

void expect_gpu_equals_cpu(const Chain& chain, const std::string& name, int w, int h, Format f, BorderMode mode,
                           std::uint32_t seed, std::initializer_list<int> tiles) {
  const Image src = test::random_image(w, h, f, seed);
  const Border border = border_for(mode);
  const Image expected = cpu_reference(src, chain, border);
  for (int tile : tiles) {
    JobOptions o;
    o.border = border;
    o.schedule.tile = {tile, tile};
    o.exact = true;  // large 2-D kernels convolve directly, not through cuFFT (tests/gpu/test_gpu_fft.cpp)
    ASSERT_TRUE(same_bits(expected, run_on(src, chain, first_gpus(1), o)))
        << config(name, mode, f, w, h) << ", 1 GPU, tile " << tile;
  }
}

TEST(GpuLargeKernels, HaloLargerThanTheTileEveryBorder) {
  TF_REQUIRE_GPU();
  std::vector<std::pair<std::string, Chain>> cases;
  for (const char* spec : {"gaussian:sigma=14", "gaussian:sigma=100", "box:radius=300", "box:radius=130",
                           "unsharp:sigma=40", "unsharp:sigma=50,amount=1.5"})
    cases.push_back({spec, parse_chain({spec})});
  cases.push_back({"random300x5", {random_kernel_stage(300, 5, 31)}});
  cases.push_back({"random3x301", {random_kernel_stage(3, 301, 32)}});
  cases.push_back({"box 300 | gaussian 20", parse_chain({"box:radius=300", "gaussian:sigma=20"})});
  const Format formats[] = {{PixelType::U8, 4}, {PixelType::U16, 3}, {PixelType::F32, 1}};
  std::uint32_t seed = test::test_seed(12500);
  for (const auto& [name, chain] : cases)
    for (BorderMode mode : kBorders)
      for (const Format& f : formats)
        for (auto [w, h] : {std::pair{37, 23}, std::pair{5, 3}})
          expect_gpu_equals_cpu(chain, name, w, h, f, mode, seed++, {16, 0});
}

TEST(GpuLargeKernels, WidestKernelsOnTinyImages) {
  TF_REQUIRE_GPU();
  std::vector<std::pair<std::string, Chain>> cases;
  for (const char* spec : {"gaussian:sigma=500", "box:radius=2000", "unsharp:sigma=300,amount=2,radius=2000"})
    cases.push_back({spec, parse_chain({spec})});
  cases.push_back({"random1023x1023", {random_kernel_stage(1023, 1023, 33)}});
  std::uint32_t seed = test::test_seed(12600);
  for (const auto& [name, chain] : cases)
    for (BorderMode mode : {BorderMode::Reflect101, BorderMode::Wrap, BorderMode::Constant})
      expect_gpu_equals_cpu(chain, name, 9, 7, Format{PixelType::U8, 3}, mode, seed++, {16});
}

TEST(GpuLargeKernels, WidePathEqualsTheNaiveReference) {
  TF_REQUIRE_GPU();
  const Chain chain = parse_chain({"gaussian:sigma=100"});
  const Image src = test::random_image(45, 31, Format{PixelType::U16, 4}, test::test_seed(12700));
  for (BorderMode mode : kBorders) {
    const Border border = border_for(mode);
    JobOptions o;
    o.border = border;
    o.schedule.tile = {16, 16};
    ASSERT_TRUE(same_bits(test::naive_filter(src, chain, border), run_on(src, chain, first_gpus(1), o)))
        << config("gaussian:sigma=100", mode, src.format(), 45, 31);
  }
}

TEST(GpuLargeKernels, ManyTilesUnderSigma150) {
  TF_REQUIRE_GPU();
  const Chain chain = parse_chain({"gaussian:sigma=150"});
  std::uint32_t seed = test::test_seed(12800);
  for (BorderMode mode : {BorderMode::Reflect101, BorderMode::Wrap})
    expect_gpu_equals_cpu(chain, "gaussian:sigma=150", 1201, 803, Format{PixelType::U8, 3}, mode, seed++, {0, 333});
  // Box sums (integer running sums) over many tiles, and box sums in a chain.
  const Chain box = parse_chain({"box:radius=500"});
  expect_gpu_equals_cpu(box, "box:radius=500", 2100, 1300, Format{PixelType::U8, 4}, BorderMode::Reflect, seed++,
                        {0, 700});
  expect_gpu_equals_cpu(box, "box:radius=500", 1100, 900, Format{PixelType::U16, 1}, BorderMode::Constant, seed++, {0});
  const Chain chain2 = parse_chain({"box:radius=200", "sharpen", "box:radius=129"});
  expect_gpu_equals_cpu(chain2, "box 200 | sharpen | box 129", 900, 700, Format{PixelType::U8, 3},
                        BorderMode::Reflect101, seed++, {0, 256});
}

}  // namespace
}  // namespace tf::gputest
