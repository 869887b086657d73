// The CPU backend equals the naive, independent reference (tests/support/naive_reference.hpp) bit
// for bit: every preset kind of kernel, custom kernels of odd and even sizes, a chain, every border
// mode, pixel type and channel count, odd sizes, one worker and three, several tile sizes.
#include <array>
#include <fstream>

#include <fmt/format.h>

#include "naive_reference.hpp"
#include "test_support.hpp"
#include "tilefilter/engine/scheduler.hpp"

namespace tf {
namespace {

struct FilterCase {
  std::string name;
  std::vector<std::string> specs;
};

// Kernel files for the custom preset, written once (the files are read when a spec is parsed).
std::string kernel_file(const std::string& name, const std::string& text) {
  static const test::TempDir dir;
  const std::string path = dir / (name + ".txt");
  std::ofstream(path) << text;
  return path;
}

const std::vector<FilterCase>& filter_cases() {
  static const std::vector<FilterCase> cases = [] {
    const std::string odd =
        kernel_file("odd3x5", "0.11 -0.2 0.05\n0.3 0.9 -0.13\n-0.07 0.21 0.4\n0.02 -0.3 0.17\n0.5 0.01 -0.6\n");
    const std::string even = kernel_file("even4x2", "0.1 0.2 -0.3 0.05\n0.4 -0.1 0.2 0.3\n");
    const std::string rank1 = kernel_file("rank1_3x3", "0.1 -0.2 0.35\n0.2 -0.4 0.7\n-0.05 0.1 -0.175\n");
    const std::string row = kernel_file("row1x4", "0.3 -0.1 0.6 0.25\n");
    const std::string col = kernel_file("col5x1", "0.2\n-0.45\n1.3\n0.15\n-0.2\n");
    const std::string norm = kernel_file("norm2x2", "1 3\n2 7\n");
    std::vector<FilterCase> c = {
        {"identity", {"identity"}},
        {"box_r1", {"box:radius=1"}},
        {"box_r2", {"box:radius=2"}},
        {"gaussian_s1", {"gaussian:sigma=1"}},
        {"gaussian_s07_r2", {"gaussian:sigma=0.7,radius=2"}},
        {"sharpen", {"sharpen"}},
        {"sharpen_half", {"sharpen:amount=0.5"}},  // taps 3 and -0.5: many exact ties to round
        {"unsharp", {"unsharp:sigma=0.6,amount=1.5"}},
        {"laplacian", {"laplacian"}},
        {"emboss", {"emboss"}},
        {"sobel_x", {"sobel:dir=x"}},
        {"sobel_y", {"sobel:dir=y"}},
        {"sobel_magnitude", {"sobel:dir=magnitude"}},
        {"custom_odd3x5", {"custom:file=" + odd}},
        {"custom_even4x2", {"custom:file=" + even}},
        {"custom_rank1_3x3", {"custom:file=" + rank1}},
        {"custom_row1x4", {"custom:file=" + row}},
        {"custom_col5x1", {"custom:file=" + col}},
        {"custom_normalized2x2", {"custom:file=" + norm + ",normalize=1"}},
        {"chain_gaussian_sharpen", {"gaussian:sigma=0.8", "sharpen:amount=0.5"}},
        {"chain_magnitude_even", {"sobel", "custom:file=" + even}},
    };
    return c;
  }();
  return cases;
}

std::vector<DevicePtr> cpus(int n) { return select_devices(fmt::format("cpu:{}", n)).devices; }

std::string difference(const Image& expected, const Image& actual) {
  const test::Difference d = test::compare(expected.view(), actual.view());
  return fmt::format("max |diff| {} at x={} y={} channel {}", d.max_abs, d.x, d.y, d.c);
}

// The random source images, one per size and format (each with its own seed), shared by the five
// border modes: making them costs more than filtering them.
struct Source {
  int width, height;
  Format format;
  std::uint32_t seed;
  Image image;
};
std::vector<Source> sources() {
  std::vector<Source> v;
  std::uint32_t seed = test::test_seed(7000);
  for (auto [w, h] : test::kReferenceSizes)
    for (PixelType type : test::kReferenceTypes)
      for (int channels : test::kReferenceChannels) {
        const Format f{type, channels};
        v.push_back({w, h, f, seed, test::random_image(w, h, f, seed)});
        ++seed;
      }
  return v;
}

class NaiveReference : public ::testing::TestWithParam<std::size_t> {};

TEST_P(NaiveReference, CpuBackendEqualsItBitForBit) {
  const FilterCase& fc = filter_cases()[GetParam()];
  const Chain chain = parse_chain(fc.specs);
  struct Run {
    int workers, tile;
  };
  const Run runs[] = {{1, 0}, {3, 16}, {3, 37}};  // tile 0 = automatic (one tile at these sizes)
  const std::vector<DevicePtr> devices[] = {cpus(1), cpus(3)};
  for (const Source& s : sources())
    for (BorderMode mode : test::kReferenceModes) {
      SCOPED_TRACE(fmt::format("{} {}x{} {} border={} seed {}", fc.name, s.width, s.height, to_string(s.format),
                               to_string(mode), s.seed));
      const Border border = test::reference_border(mode);
      const Image expected = test::naive_filter(s.image, chain, border);
      for (const Run& r : runs) {
        JobOptions o;
        o.border = border;
        o.schedule.tile = {r.tile, r.tile};
        const Image actual = filter_image(s.image, chain, devices[r.workers == 1 ? 0 : 1], o);
        ASSERT_TRUE(same_pixels(expected.view(), actual.view()))
            << "cpu:" << r.workers << " tile " << r.tile << ": " << difference(expected, actual);
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Presets, NaiveReference, ::testing::Range<std::size_t>(0, filter_cases().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                           return filter_cases()[info.param].name;
                         });

// The reference's own building blocks against what OpenCV documents and hand arithmetic, so that
// agreeing with it means something.
TEST(NaiveReferenceSelf, BorderSourcesAreOpenCvs) {
  // OpenCV's borderInterpolate documentation, for "abcdefgh": six samples either side.
  const std::pair<BorderMode, const char*> documented[] = {
      {BorderMode::Replicate, "aaaaaa|abcdefgh|hhhhhh"},
      {BorderMode::Reflect, "fedcba|abcdefgh|hgfedc"},
      {BorderMode::Reflect101, "gfedcb|abcdefgh|gfedcb"},
      {BorderMode::Wrap, "cdefgh|abcdefgh|abcdef"},
  };
  for (const auto& [mode, text] : documented) {
    const std::string s = text;
    std::string got;
    for (int p = -6; p < 14; ++p) {
      got += static_cast<char>('a' + test::naive_border_source(p, 8, mode));
      if (p == -1 || p == 7) got += '|';
    }
    EXPECT_EQ(got, s) << to_string(mode);
  }
  EXPECT_EQ(test::naive_border_source(-3, 8, BorderMode::Constant), -1);
  EXPECT_EQ(test::naive_border_source(8, 8, BorderMode::Constant), -1);
  // Far outside and tiny axes: reflections repeat.
  EXPECT_EQ(test::naive_border_source(-100, 1, BorderMode::Reflect101), 0);
  EXPECT_EQ(test::naive_border_source(5, 2, BorderMode::Reflect101), 1);  // 0 1 0 1 0 1
  EXPECT_EQ(test::naive_border_source(-3, 2, BorderMode::Reflect), 1);    // "ab": ab ba|ab|ba ab, p=-3 -> b
  EXPECT_EQ(test::naive_border_source(-17, 3, BorderMode::Wrap), 1);
  EXPECT_EQ(test::naive_border_source(20, 3, BorderMode::Reflect101), 0);  // period 4: 0 1 2 1
}

TEST(NaiveReferenceSelf, RoundsHalfToEven) {
  EXPECT_EQ(test::naive_round_half_even(0.5f), 0.0f);
  EXPECT_EQ(test::naive_round_half_even(1.5f), 2.0f);
  EXPECT_EQ(test::naive_round_half_even(2.5f), 2.0f);
  EXPECT_EQ(test::naive_round_half_even(-2.5f), -2.0f);
  EXPECT_EQ(test::naive_round_half_even(254.5f), 254.0f);
  EXPECT_EQ(test::naive_round_half_even(255.5f), 256.0f);
  EXPECT_EQ(test::naive_round_half_even(65534.5f), 65534.0f);
  EXPECT_EQ(test::naive_round_half_even(0.49999997f), 0.0f);
  EXPECT_EQ(test::naive_round_half_even(2.5000002f), 3.0f);
  EXPECT_EQ(test::naive_round_half_even(8388609.0f), 8388609.0f);  // 2^23 + 1: already an integer
}

TEST(NaiveReferenceSelf, HandComputedSharpen) {
  // sharpen:amount=0.5 is 3*centre - 0.5*(left + right + up + down); on a 3x1 image with reflect101
  // the rows above and below are the row itself. [1 2 2] -> [0, 2.5 -> 2, 2]; [1 2 4] -> [0, 1.5 -> 2, 6].
  const Chain chain = parse_chain({"sharpen:amount=0.5"});
  for (const auto& [in, out] : {std::pair{std::array<int, 3>{1, 2, 2}, std::array<int, 3>{0, 2, 2}},
                                std::pair{std::array<int, 3>{1, 2, 4}, std::array<int, 3>{0, 2, 6}}}) {
    Image src(3, 1, Format{PixelType::U8, 1});
    for (int x = 0; x < 3; ++x) src.view().row_as<std::uint8_t>(0)[x] = static_cast<std::uint8_t>(in[x]);
    const Image got = test::naive_filter(src, chain, Border{BorderMode::Reflect101});
    for (int x = 0; x < 3; ++x) EXPECT_EQ(got.view().row_as<std::uint8_t>(0)[x], out[x]) << "x=" << x;
  }
}

}  // namespace
}  // namespace tf
