// GPU = CPU, bit for bit (docs/design.md, contract 2): every filter, border, pixel type and channel count,
// at sizes that are multiples of nothing, for several tile sizes, on one GPU and on two.
#include <fmt/format.h>

#include "gpu_test_support.hpp"

namespace tf::gputest {
namespace {

struct FilterCase {
  std::string name;
  Chain chain;
};

std::vector<FilterCase> filter_cases() {
  std::vector<FilterCase> cases;
  for (const char* spec : {"identity", "box:radius=1", "box:radius=4", "gaussian:sigma=1.5",
                           "gaussian:sigma=5,radius=15", "box:radius=31", "sharpen", "laplacian", "emboss",
                           "sobel:dir=x", "sobel:dir=y", "sobel:dir=magnitude", "unsharp:sigma=1.3", "unsharp:sigma=5"})
    cases.push_back({spec, parse_chain({spec})});
  // Kernels the presets don't make: rank-1 single rows/columns, even sizes (off-centre anchors),
  // non-square 2-D kernels and a 63x63 one (kernel rows staged in chunks).
  cases.push_back(
      {"row1x7", {kernel_stage("row1x7", {{1 / 16.0, 2 / 16.0, 3 / 16.0, 4 / 16.0, 3 / 16.0, 2 / 16.0, 1 / 16.0}})}});
  cases.push_back({"col7x1", {kernel_stage("col7x1", {{0.25}, {-0.5}, {1.5}, {2.0}, {1.5}, {-0.5}, {0.25}})}});
  cases.push_back({"random4x6", {random_kernel_stage(4, 6, 11)}});
  cases.push_back({"random5x3", {random_kernel_stage(5, 3, 12)}});
  cases.push_back({"random2x1", {random_kernel_stage(2, 1, 13)}});
  cases.push_back({"random63x63", {random_kernel_stage(63, 63, 14)}});
  // Exact halves of integer samples, so that rounding ties to even decides every integer output: a
  // 1x2 row, a rank-1 9x9 (the compile-time 9-tap separable kernel) and a 2-D 3x3.
  std::vector<std::vector<double>> halves9(9, std::vector<double>(9, 0.0));
  halves9[0][0] = halves9[0][1] = 0.5;
  cases.push_back({"halves1x2", {kernel_stage("halves1x2", {{0.5, 0.5}})}});
  cases.push_back({"halves9x9", {kernel_stage("halves9x9", halves9)}});
  cases.push_back({"halves3x3", {kernel_stage("halves3x3", {{0.5, 0, 0}, {0, 0, 0}, {0, 0, 0.5}})}});
  cases.push_back({"random19x41", {random_kernel_stage(19, 41, 15)}});
  return cases;
}

class EveryFilter : public ::testing::TestWithParam<std::size_t> {};

// Odd sizes x every border x every format, on 1 GPU (automatic and small odd tiles) and 2 GPUs.
TEST_P(EveryFilter, BitIdenticalToCpu) {
  TF_REQUIRE_GPU();
  const FilterCase fc = filter_cases()[GetParam()];
  const auto one = first_gpus(1), two = first_gpus(2);
  const std::uint32_t seed = test::test_seed(1234 + static_cast<std::uint32_t>(GetParam()));
  SCOPED_TRACE(fmt::format("seed {}", seed));
  const std::pair<int, int> sizes[] = {{1, 1}, {7, 3}, {4097, 33}};
  int n = 0;
  for (auto [w, h] : sizes)
    for (BorderMode mode : kEveryBorder)
      for (PixelType type : kEveryType)
        for (int channels : kEveryChannelCount) {
          const Format f{type, channels};
          const Image src = test::random_image(w, h, f, seed + n++);
          const Border border = sweep_border(mode);
          const Image expected = cpu_reference(src, fc.chain, border);
          JobOptions o;
          o.border = border;
          o.exact = true;  // 63x63 convolves directly, not through cuFFT (tests/gpu/test_gpu_fft.cpp)
          const std::string what = config(fc.name, mode, f, w, h);
          ASSERT_TRUE(same_bits(expected, run_on(src, fc.chain, one, o))) << what << ", 1 GPU, automatic tiles";
          JobOptions small = o;
          small.schedule.tile = {37, 19};
          ASSERT_TRUE(same_bits(expected, run_on(src, fc.chain, one, small))) << what << ", 1 GPU, 37x19 tiles";
          if (two.size() == 2) {
            JobOptions split = o;
            split.schedule.tile = {64, 16};
            ASSERT_TRUE(same_bits(expected, run_on(src, fc.chain, two, split))) << what << ", 2 GPUs, 64x16 tiles";
          }
        }
}

INSTANTIATE_TEST_SUITE_P(Gpu, EveryFilter, ::testing::Range<std::size_t>(0, filter_cases().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                           std::string name = filter_cases()[info.param].name;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

// Larger images: seams between many tiles, several tile shapes, one and two GPUs.
TEST(GpuEquivalence, LargeImagesAndTileSizes) {
  TF_REQUIRE_GPU();
  const auto one = first_gpus(1), two = first_gpus(2);
  const std::uint32_t seed = test::test_seed(77);
  SCOPED_TRACE(fmt::format("seed {}", seed));
  const Format formats[] = {{PixelType::U8, 4}, {PixelType::F32, 3}, {PixelType::U16, 1}};
  const char* specs[] = {"box:radius=4", "gaussian:sigma=5,radius=15", "unsharp:sigma=1.3", "sobel:dir=magnitude",
                         "sharpen"};
  int n = 0;
  for (const Format& f : formats) {
    const Image src = test::random_image(2053, 1301, f, seed + n++);
    for (const char* spec : specs) {
      const Chain chain = parse_chain({spec});
      for (BorderMode mode : {BorderMode::Reflect101, BorderMode::Wrap, BorderMode::Constant}) {
        const Border border = sweep_border(mode);
        const Image expected = cpu_reference(src, chain, border);
        const std::string what = config(spec, mode, f, 2053, 1301);
        JobOptions o;
        o.border = border;
        ASSERT_TRUE(same_bits(expected, run_on(src, chain, one, o))) << what << ", 1 GPU, automatic tiles";
        o.schedule.tile = {500, 301};
        ASSERT_TRUE(same_bits(expected, run_on(src, chain, one, o))) << what << ", 1 GPU, 500x301 tiles";
        if (two.size() == 2) {
          o.schedule.tile = {333, 1000};
          ASSERT_TRUE(same_bits(expected, run_on(src, chain, two, o))) << what << ", 2 GPUs, 333x1000 tiles";
        }
      }
    }
  }
}

// A 255-tap separable kernel (the largest the fused separable kernel takes) at small sizes; larger
// ones are in test_gpu_large_kernels.cpp.
TEST(GpuEquivalence, LargestSeparableKernel) {
  TF_REQUIRE_GPU();
  const Chain chain = parse_chain({"gaussian:sigma=40,radius=127"});
  const std::uint32_t seed = test::test_seed(99);
  for (BorderMode mode : kEveryBorder)
    for (auto [w, h] : {std::pair{1, 1}, std::pair{300, 7}, std::pair{9, 400}}) {
      const Image src = test::random_image(w, h, {PixelType::U8, 4}, seed);
      const Border border = sweep_border(mode);
      JobOptions o;
      o.border = border;
      ASSERT_TRUE(same_bits(cpu_reference(src, chain, border), run_on(src, chain, first_gpus(1), o)))
          << config("gaussian radius 127", mode, {PixelType::U8, 4}, w, h);
    }
}

// Chains run per tile in one upload with the summed halo (wrap borders split them into passes).
TEST(GpuEquivalence, Chains) {
  TF_REQUIRE_GPU();
  const auto one = first_gpus(1), two = first_gpus(2);
  const std::vector<std::vector<std::string>> chains = {{"gaussian:sigma=1", "sharpen"},
                                                        {"box:radius=2", "sobel:dir=magnitude", "gaussian:sigma=1.5"},
                                                        {"unsharp:sigma=1.3", "identity", "laplacian"}};
  const Format formats[] = {{PixelType::U8, 4}, {PixelType::F32, 1}, {PixelType::U16, 3}};
  const std::uint32_t seed = test::test_seed(5);
  int n = 0;
  for (const auto& specs : chains) {
    const Chain chain = parse_chain(specs);
    const std::string name = fmt::format("{}", fmt::join(specs, " | "));
    for (auto [w, h] : {std::pair{1, 1}, std::pair{7, 3}, std::pair{4097, 33}, std::pair{1201, 803}})
      for (BorderMode mode : kEveryBorder)
        for (const Format& f : formats) {
          const Image src = test::random_image(w, h, f, seed + n++);
          const Border border = sweep_border(mode);
          const Image expected = cpu_reference(src, chain, border);
          const std::string what = config(name, mode, f, w, h);
          JobOptions o;
          o.border = border;
          ASSERT_TRUE(same_bits(expected, run_on(src, chain, one, o))) << what << ", 1 GPU";
          o.schedule.tile = {37, 19};
          ASSERT_TRUE(same_bits(expected, run_on(src, chain, one, o))) << what << ", 1 GPU, 37x19 tiles";
          if (two.size() == 2) {
            o.schedule.tile = {128, 96};
            ASSERT_TRUE(same_bits(expected, run_on(src, chain, two, o))) << what << ", 2 GPUs, 128x96 tiles";
          }
        }
  }
}

}  // namespace
}  // namespace tf::gputest
