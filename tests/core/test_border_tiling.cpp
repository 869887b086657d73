// The tiler and the border function: pure functions, checked exhaustively on small cases.
#include <set>

#include "test_support.hpp"
#include "tilefilter/engine/tiling.hpp"
#include "tilefilter/image/border.hpp"
#include "tilefilter/image/image.hpp"
#include "tilefilter/util/error.hpp"

namespace tf {
namespace {

TEST(Border, KnownValues) {
  // OpenCV's documented examples: "fedcba|abcdefgh|hgfedcb" for reflect101 etc.
  EXPECT_EQ(border_index(-1, 8, BorderMode::Reflect101), 1);
  EXPECT_EQ(border_index(-1, 8, BorderMode::Reflect), 0);
  EXPECT_EQ(border_index(-3, 8, BorderMode::Replicate), 0);
  EXPECT_EQ(border_index(8, 8, BorderMode::Wrap), 0);
  EXPECT_EQ(border_index(-1, 8, BorderMode::Wrap), 7);
  EXPECT_EQ(border_index(9, 8, BorderMode::Reflect101), 5);
  EXPECT_EQ(border_index(-5, 8, BorderMode::Constant), -1);
  EXPECT_EQ(border_index(-7, 1, BorderMode::Reflect101), 0);
  EXPECT_EQ(border_index(-25, 3, BorderMode::Wrap), 2);
}

TEST(Border, AlwaysInsideForAnyCoordinate) {
  for (auto m : {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Wrap})
    for (int n = 1; n < 9; ++n)
      for (int p = -300; p < 300; ++p) {
        const int i = border_index(p, n, m);
        ASSERT_GE(i, 0);
        ASSERT_LT(i, n);
      }
}

TEST(Border, ParseNames) {
  EXPECT_EQ(parse_border_mode("wrap"), BorderMode::Wrap);
  EXPECT_EQ(parse_border_mode("reflect101"), BorderMode::Reflect101);
  EXPECT_FALSE(parse_border_mode("mirror").has_value());
}

TEST(ImageViews, OverlapAndSameView) {
  Image image(40, 30, Format{PixelType::U8, 3});
  const ImageView all = image.view();
  const ImageView top = all.sub({0, 0, 40, 10}), bottom = all.sub({0, 10, 40, 20});
  const ImageView left = all.sub({0, 0, 5, 30}), right = all.sub({35, 0, 5, 30});
  EXPECT_FALSE(overlaps(top, bottom));
  EXPECT_TRUE(overlaps(all, bottom));
  EXPECT_TRUE(overlaps(left, right));  // the bytes they span interleave row by row
  EXPECT_TRUE(same_view(all, image.view()));
  EXPECT_FALSE(same_view(all, top.sub({0, 0, 40, 10}).sub({1, 0, 39, 10})));
  EXPECT_FALSE(same_view(top, bottom));
}

TEST(Tiling, TilesCoverTheImageExactlyOnce) {
  for (auto [w, h] : {std::pair{1, 1}, std::pair{7, 3}, std::pair{4097, 33}, std::pair{1000, 1000}})
    for (int tw : {16, 33, 256, 4096})
      for (int th : {16, 100}) {
        const Halo halo{3, 1, 2, 4};
        const auto tiles = plan_tiles(w, h, halo, {tw, th});
        std::vector<int> covered(static_cast<std::size_t>(w) * h, 0);
        for (const auto& t : tiles) {
          ASSERT_GE(t.out.x, 0);
          ASSERT_LE(t.out.right(), w);
          ASSERT_LE(t.out.bottom(), h);
          EXPECT_EQ(t.in.x, t.out.x - 3);
          EXPECT_EQ(t.in.y, t.out.y - 1);
          EXPECT_EQ(t.in.right(), t.out.right() + 2);
          EXPECT_EQ(t.in.bottom(), t.out.bottom() + 4);
          for (int y = t.out.y; y < t.out.bottom(); ++y)
            for (int x = t.out.x; x < t.out.right(); ++x) ++covered[static_cast<std::size_t>(y) * w + x];
        }
        EXPECT_TRUE(std::all_of(covered.begin(), covered.end(), [](int c) { return c == 1; }))
            << w << "x" << h << " " << tw;
      }
}

TEST(Tiling, BadArgumentsAreRefused) {
  EXPECT_THROW(plan_tiles(0, 10, {}, {16, 16}), Error);
  EXPECT_THROW(plan_tiles(10, 10, {}, {0, 16}), Error);
}

TEST(Tiling, BudgetGivesATileThatFits) {
  const Format f{PixelType::U8, 4};
  const Halo halo{15, 15, 15, 15};
  for (std::size_t budget : {std::size_t(1) << 20, std::size_t(64) << 20, std::size_t(8) << 30}) {
    const int side = tile_side_for_budget(budget, f, halo);
    EXPECT_GE(side, 16);
    EXPECT_LE(tile_working_set({side, side}, f, halo), budget);
    EXPECT_GT(tile_working_set({side + 64, side + 64}, f, halo), budget);
  }
}

// Compute-bound GPU tiles grow with the halo (gaussian sigma=150: 450 pixels a side) and split the
// image evenly; small halos keep the square side.
TEST(Tiling, HaloTilesGrowWithTheHalo) {
  const Format f{PixelType::U8, 3};
  const std::size_t big = std::size_t(8) << 30;
  const Halo wide{450, 450, 450, 450};
  EXPECT_EQ(halo_tile_for_budget(4000, 3000, big, f, {15, 15, 15, 15}, 1024, 4), (TileSize{1024, 1024}));
  EXPECT_EQ(halo_tile_for_budget(4000, 3000, big, f, wide, 1024, 4), (TileSize{2016, 3008}));
  EXPECT_EQ(halo_tile_for_budget(8192, 8192, big, f, wide, 1024, 4), (TileSize{2752, 2752}));
  EXPECT_EQ(halo_tile_for_budget(1000, 700, big, f, wide, 1024, 4), (TileSize{1024, 704}));
  for (std::size_t budget : {std::size_t(64) << 20, std::size_t(256) << 20, big}) {
    const TileSize t = halo_tile_for_budget(4000, 3000, budget, f, wide, 1024, 4);
    EXPECT_LE(tile_working_set(t, f, wide), budget) << budget;
  }
}

TEST(Tiling, StripsSpanTheImageAndFitTheBudget) {
  const Format f{PixelType::U8, 4};
  const std::size_t big = std::size_t(512) << 20;
  const long long target = 8192 * 256;
  EXPECT_EQ(strip_tile_for_budget(8192, big, f, {4, 4, 4, 4}, target), (TileSize{8192, 256}));
  EXPECT_EQ(strip_tile_for_budget(6000, big, f, {4, 4, 4, 4}, target),
            (TileSize{6000, 352}));  // a narrower image: more rows
  EXPECT_EQ(strip_tile_for_budget(20000, big, f, {4, 4, 4, 4}, target),
            (TileSize{6688, 320}));  // a wider one: three strips side by side
  EXPECT_EQ(strip_tile_for_budget(8192, big, f, {15, 15, 15, 15}, target),
            (TileSize{4096, 512}));  // 16x the 30 halo rows
  EXPECT_EQ(strip_tile_for_budget(8192, big, f, {15, 15, 15, 15}, target, true),
            (TileSize{8192, 256}));  // a device that carries halo rows down a band
  EXPECT_EQ(strip_tile_for_budget(300, big, f, {1, 1, 1, 1}, target), (TileSize{300, 7008}));
  for (std::size_t budget :
       {std::size_t(2) << 20, std::size_t(24) << 20, std::size_t(40) << 20, std::size_t(64) << 20, big}) {
    const Halo halo{7, 9, 7, 9};
    const TileSize t = strip_tile_for_budget(8192, budget, f, halo, target);
    EXPECT_LE(tile_working_set(t, f, halo), budget) << budget;
    if (budget < (std::size_t(24) << 20)) EXPECT_EQ(t.width, t.height) << "a small budget gets square tiles";
  }
}

}  // namespace
}  // namespace tf
