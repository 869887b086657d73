// The tiler and the border function: pure functions, checked exhaustively on small cases.
#include <set>

#include "test_support.hpp"
#include "tilefilter/border.hpp"
#include "tilefilter/error.hpp"
#include "tilefilter/tiling.hpp"

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

TEST(Tiling, TilesCoverTheImageExactlyOnce) {
  for (auto [w, h] : {std::pair{1, 1}, std::pair{7, 3}, std::pair{4097, 33}, std::pair{1000, 1000}})
    for (int tw : {16, 33, 256, 4096})
      for (int th : {16, 100}) {
        const Halo halo{3, 1, 2, 4};
        const auto tiles = plan_tiles(w, h, halo, tw, th);
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
        EXPECT_TRUE(std::all_of(covered.begin(), covered.end(), [](int c) { return c == 1; })) << w << "x" << h << " " << tw;
      }
}

TEST(Tiling, BadArgumentsAreRefused) {
  EXPECT_THROW(plan_tiles(0, 10, {}, 16, 16), Error);
  EXPECT_THROW(plan_tiles(10, 10, {}, 0, 16), Error);
}

TEST(Tiling, BudgetGivesATileThatFits) {
  const Format f{PixelType::U8, 4};
  const Halo halo{15, 15, 15, 15};
  for (std::size_t budget : {std::size_t(1) << 20, std::size_t(64) << 20, std::size_t(8) << 30}) {
    const int side = tile_side_for_budget(budget, f, halo);
    EXPECT_GE(side, 16);
    EXPECT_LE(tile_working_set(side, side, f, halo), budget);
    EXPECT_GT(tile_working_set(side + 64, side + 64, f, halo), budget);
  }
}

}  // namespace
}  // namespace tf
