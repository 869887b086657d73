// The CUDA backend equals the naive, independent reference (tests/support/naive_reference.hpp) bit
// for bit — not only the CPU backend: every preset kind of kernel, kernels of odd and even sizes,
// chains, every border mode, pixel type and channel count, odd sizes, one GPU and two.
// Without a GPU every test skips with CUDA's reason.
#include <fmt/format.h>

#include "gpu_test_support.hpp"
#include "naive_reference.hpp"

namespace tf::gputest {
namespace {

struct ReferenceCase {
  std::string name;
  Chain chain;
};

const std::vector<ReferenceCase>& reference_cases() {
  static const std::vector<ReferenceCase> cases = [] {
    std::vector<ReferenceCase> c;
    for (const char* spec :
         {"identity", "box:radius=1", "box:radius=2", "gaussian:sigma=1", "gaussian:sigma=0.7,radius=2", "sharpen",
          "sharpen:amount=0.5", "unsharp:sigma=0.6,amount=1.5", "laplacian", "emboss", "sobel:dir=x", "sobel:dir=y",
          "sobel:dir=magnitude"})
      c.push_back({spec, parse_chain({spec})});
    // Kernels as the custom preset makes them (separable when rank 1): odd and even sizes,
    // off-centre anchors, single rows and columns, and 2-D kernels large enough to be staged in parts.
    c.push_back(
        {"odd3x5",
         {kernel_stage(
             "odd3x5",
             {{0.11, -0.2, 0.05}, {0.3, 0.9, -0.13}, {-0.07, 0.21, 0.4}, {0.02, -0.3, 0.17}, {0.5, 0.01, -0.6}})}});
    c.push_back({"even4x2", {kernel_stage("even4x2", {{0.1, 0.2, -0.3, 0.05}, {0.4, -0.1, 0.2, 0.3}})}});
    c.push_back(
        {"rank1_3x3", {kernel_stage("rank1_3x3", {{0.1, -0.2, 0.35}, {0.2, -0.4, 0.7}, {-0.05, 0.1, -0.175}})}});
    c.push_back({"row1x4", {kernel_stage("row1x4", {{0.3, -0.1, 0.6, 0.25}})}});
    c.push_back({"col5x1", {kernel_stage("col5x1", {{0.2}, {-0.45}, {1.3}, {0.15}, {-0.2}})}});
    c.push_back({"random6x4", {random_kernel_stage(6, 4, 21)}});
    c.push_back({"random19x23", {random_kernel_stage(19, 23, 22)}});
    c.push_back({"chain gaussian sharpen", parse_chain({"gaussian:sigma=0.8", "sharpen:amount=0.5"})});
    Chain magnitude_even = parse_chain({"sobel"});
    magnitude_even.push_back(kernel_stage("even4x2", {{0.1, 0.2, -0.3, 0.05}, {0.4, -0.1, 0.2, 0.3}}));
    c.push_back({"chain magnitude even4x2", magnitude_even});
    return c;
  }();
  return cases;
}

class GpuNaiveReference : public ::testing::TestWithParam<std::size_t> {};

TEST_P(GpuNaiveReference, BitIdenticalToNaiveReference) {
  TF_REQUIRE_GPU();
  const ReferenceCase& rc = reference_cases()[GetParam()];
  const auto one = first_gpus(1), two = first_gpus(2);
  std::uint32_t seed = test::test_seed(9100 + 100 * static_cast<std::uint32_t>(GetParam()));
  for (auto [w, h] : test::kReferenceSizes)
    for (PixelType type : test::kReferenceTypes)
      for (int channels : test::kReferenceChannels)
        for (BorderMode mode : test::kReferenceModes) {
          const Format f{type, channels};
          SCOPED_TRACE(fmt::format("seed {}", seed));
          const Image src = test::random_image(w, h, f, seed++);
          const Border border = test::reference_border(mode);
          const Image expected = test::naive_filter(src, rc.chain, border);
          const std::string what = config(rc.name, mode, f, w, h) + " (expected = naive reference)";
          JobOptions o;
          o.border = border;
          ASSERT_TRUE(same_bits(expected, run_on(src, rc.chain, one, o))) << what << ", 1 GPU, automatic tiles";
          JobOptions small = o;
          small.schedule.tile = {37, 19};
          ASSERT_TRUE(same_bits(expected, run_on(src, rc.chain, one, small))) << what << ", 1 GPU, 37x19 tiles";
          if (two.size() == 2) {
            JobOptions split = o;
            split.schedule.tile = {64, 16};
            ASSERT_TRUE(same_bits(expected, run_on(src, rc.chain, two, split))) << what << ", 2 GPUs, 64x16 tiles";
          }
        }
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuNaiveReference, ::testing::Range<std::size_t>(0, reference_cases().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                           std::string name = reference_cases()[info.param].name;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace tf::gputest
