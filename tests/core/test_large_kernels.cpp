// Large kernels (issue 12) on the CPU backend: halos larger than the tile (tile 16 under radius 40
// and up), halos larger than the image (every border mode, wrap included), the widest presets
// (gaussian sigma 500, box radius 2000, unsharp radius 2000 as a sum) and custom kernels past the
// old 255 limit, each equal to the naive reference (tests/support/naive_reference.hpp) bit for bit.
// Small images with big kernels keep the runtime small.
#include <array>
#include <fstream>

#include <fmt/format.h>

#include "naive_reference.hpp"
#include "test_support.hpp"
#include "tilefilter/engine/scheduler.hpp"

namespace tf {
namespace {

const BorderMode kModes[] = {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Constant,
                             BorderMode::Wrap};

Border border_for(BorderMode m) { return Border{m, m == BorderMode::Constant ? 100.5f : 0.0f}; }

std::string kernel_file(const std::string& name, int w, int h, std::uint32_t seed) {
  static const test::TempDir dir;
  const std::string path = dir / (name + ".txt");
  std::ofstream f(path);
  std::uint32_t s = seed;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      s = s * 1664525u + 1013904223u;
      f << (x ? " " : "") << (static_cast<int>(s >> 20) % 2001 - 1000) / (500.0 * w * h / 8 + 1);
    }
    f << "\n";
  }
  return path;
}

// CPU (cpu:3, every tile size given, and automatic tiles) = naive reference, bitwise.
void expect_equal_to_reference(const Chain& chain, const std::string& name, int w, int h, Format f, BorderMode mode,
                               std::uint32_t seed, std::initializer_list<int> tiles) {
  SCOPED_TRACE(fmt::format("{} {}x{} {} border={} seed {}", name, w, h, to_string(f), to_string(mode), seed));
  const Image src = test::random_image(w, h, f, seed);
  const Border border = border_for(mode);
  const Image expected = test::naive_filter(src, chain, border);
  for (int tile : tiles) {
    JobOptions o;
    o.border = border;
    o.schedule.tile = {tile, tile};
    o.exact = true;  // direct convolution: the reference's bits (wide2d would take the FFT path)
    const Image actual = filter_image(src, chain, select_devices("cpu:3").devices, o);
    const test::Difference d = test::compare(expected.view(), actual.view());
    ASSERT_TRUE(same_pixels(expected.view(), actual.view()))
        << "tile " << tile << ": max |diff| " << d.max_abs << " at " << d.x << "," << d.y << " c" << d.c;
  }
}

TEST(LargeKernels, HaloLargerThanTheTileEqualsTheReference) {
  const std::string row301 = kernel_file("row301", 301, 1, 1);
  const std::string wide2d = kernel_file("wide257x3", 257, 3, 2);  // 2-D past the old 255 limit
  const std::vector<std::vector<std::string>> chains = {{"box:radius=40"},
                                                        {"box:radius=130"} /* integer box sums (f32: FMAs) */,
                                                        {"gaussian:sigma=14"},
                                                        {"unsharp:sigma=50,amount=1.5"},  // radius 150: a sum
                                                        {"custom:file=" + row301},
                                                        {"custom:file=" + wide2d},
                                                        {"box:radius=30", "gaussian:sigma=9"}};
  std::uint32_t seed = test::test_seed(12000);
  for (const auto& specs : chains) {
    const Chain chain = parse_chain(specs);
    const std::string name = fmt::format("{}", fmt::join(specs, " | "));
    for (BorderMode mode : kModes)
      for (PixelType type : {PixelType::U8, PixelType::U16, PixelType::F32})
        for (auto [w, h] : {std::pair{37, 23}, std::pair{5, 3}})
          expect_equal_to_reference(chain, name, w, h, Format{type, type == PixelType::U16 ? 1 : 3}, mode, seed++,
                                    {16, 0});
  }
}

TEST(LargeKernels, WidestPresetsOnImagesSmallerThanTheKernel) {
  std::uint32_t seed = test::test_seed(12100);
  // Two border modes each (a 4001^2 padded plane per run is the cost): all five over the three.
  const std::pair<const char*, std::array<BorderMode, 2>> cases[] = {
      {"gaussian:sigma=500", {BorderMode::Reflect101, BorderMode::Wrap}},
      {"box:radius=2000", {BorderMode::Reflect, BorderMode::Constant}},
      {"unsharp:sigma=300,amount=2,radius=2000", {BorderMode::Replicate, BorderMode::Wrap}}};
  for (const auto& [spec, modes] : cases) {
    const Chain chain = parse_chain({spec});
    for (BorderMode mode : modes)
      expect_equal_to_reference(chain, spec, 9, 7, Format{PixelType::U8, 1}, mode, seed++, {16});
  }
}

TEST(LargeKernels, OneRowOfTheMostTapsAndATallColumn) {
  const Chain row = parse_chain({"custom:file=" + kernel_file("row4095", 4095, 1, 3)});
  const Chain col = parse_chain({"custom:file=" + kernel_file("col1001", 1, 1001, 4)});
  std::uint32_t seed = test::test_seed(12200);
  for (BorderMode mode : {BorderMode::Reflect101, BorderMode::Wrap, BorderMode::Constant}) {
    expect_equal_to_reference(row, "row 4095", 31, 5, Format{PixelType::F32, 1}, mode, seed++, {16});
    expect_equal_to_reference(col, "column 1001", 6, 29, Format{PixelType::U16, 3}, mode, seed++, {16});
  }
}

// Box sums are exact: a constant image stays constant under any radius and any border but constant.
TEST(LargeKernels, BoxSumsAreExactMeans) {
  const Stage box = parse_filter_spec("box:radius=700");
  ASSERT_TRUE(box.convs[0].box_sum);
  EXPECT_FALSE(parse_filter_spec("box:radius=127").convs[0].box_sum);
  for (PixelType type : {PixelType::U8, PixelType::U16}) {
    Image src(23, 11, Format{type, 3});
    for (int y = 0; y < src.height(); ++y)
      for (int i = 0; i < src.width() * 3; ++i) {
        if (type == PixelType::U8) src.view().row_as<std::uint8_t>(y)[i] = 201;
        else src.view().row_as<std::uint16_t>(y)[i] = 60001;
      }
    JobOptions o;
    o.schedule.tile = {16, 16};
    for (BorderMode mode : {BorderMode::Reflect101, BorderMode::Wrap, BorderMode::Replicate}) {
      o.border = {mode, 0};
      EXPECT_TRUE(same_pixels(src.view(), filter_image(src, {box}, select_devices("cpu:2").devices, o).view()))
          << to_string(mode);
    }
  }
}

TEST(LargeKernels, AutomaticCpuTilesGrowWithTheHalo) {
  const Chain chain = parse_chain({"gaussian:sigma=150"});
  const Image src = test::random_image(64, 48, Format{PixelType::U8, 3}, 5);
  const auto devices = select_devices("cpu:1").devices;
  TileJob job{};
  job.src = src.view();
  job.chain = &chain;
  const TileSize t = devices[0]->preferred_tile(job);
  EXPECT_GE(t.width, 900) << "at least twice the 450-pixel halo";
  EXPECT_LE(t.width, 1024);
}

}  // namespace
}  // namespace tf
