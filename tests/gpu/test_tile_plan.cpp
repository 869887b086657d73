// The GPU tile planner (pure C++, runs without a GPU): uploads only in-image pixels, and its border
// maps agree with core's border_index() for the first stage and with cpu::resynthesize_border for
// the intermediates of a chain.
#ifdef TF_HAVE_CUDA
#include <gtest/gtest.h>

#include "tile_plan.hpp"
#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/engine/fft_blocks.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {
namespace {

const BorderMode kModes[] = {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Constant,
                             BorderMode::Wrap};

// Source coordinate of compact index m along one axis.
int source_of(const std::vector<AxisRun>& runs, int m) {
  for (const auto& r : runs)
    if (m >= r.compact && m < r.compact + r.length) return r.source + m - r.compact;
  return -100;
}

TEST(TilePlan, FirstStageMapsFollowBorderIndex) {
  const Chain chain = parse_chain({"gaussian:sigma=2"});
  const Halo h = chain_halo(chain);
  for (BorderMode mode : kModes)
    for (auto [w, ht] : {std::pair{1, 1}, std::pair{7, 3}, std::pair{100, 37}, std::pair{4097, 33}})
      for (const Tile& t : plan_tiles(w, ht, h, {40, 16})) {
        const TilePlan p = plan_tile(chain, t, w, ht, mode);
        const StagePlan& s = p.stages[0];
        EXPECT_EQ(s.plane, t.in);
        EXPECT_EQ(s.computed, t.out);
        for (int i = 0; i < t.in.width; ++i) {
          const int expect = border_index(t.in.x + i, w, mode), m = p.maps[s.xmap + i];
          EXPECT_EQ(m < 0 ? -1 : source_of(p.columns, m), expect) << to_string(mode) << " x " << t.in.x + i;
        }
        for (int i = 0; i < t.in.height; ++i) {
          const int expect = border_index(t.in.y + i, ht, mode), m = p.maps[s.ymap + i];
          EXPECT_EQ(m < 0 ? -1 : source_of(p.rows, m), expect) << to_string(mode) << " y " << t.in.y + i;
        }
        // Uploads are in-image pixels only, at most the padded tile.
        EXPECT_LE(p.upload_width, std::min(t.in.width, w));
        EXPECT_LE(p.upload_height, std::min(t.in.height, ht));
        if (mode != BorderMode::Wrap) {
          EXPECT_EQ(p.columns.size(), 1u);
          EXPECT_EQ(p.rows.size(), 1u);
        }
      }
}

TEST(TilePlan, WrapAtACornerUploadsTheFarEdge) {
  const Chain chain = parse_chain({"box:radius=3"});
  const Tile t = plan_tiles(1000, 800, chain_halo(chain), {100, 100}).front();
  const TilePlan p = plan_tile(chain, t, 1000, 800, BorderMode::Wrap);
  ASSERT_EQ(p.columns.size(), 2u);
  EXPECT_EQ(p.columns[0].source, 0);
  EXPECT_EQ(p.columns[0].length, 103);
  EXPECT_EQ(p.columns[1].source, 997);
  EXPECT_EQ(p.columns[1].length, 3);
  EXPECT_EQ(p.upload_width, 106);
}

TEST(TilePlan, ChainStagesComputeInImagePartsAndMapTheRest) {
  const Chain chain = parse_chain({"box:radius=2", "sharpen", "gaussian:sigma=1"});
  for (BorderMode mode : {BorderMode::Reflect101, BorderMode::Replicate, BorderMode::Constant})
    for (const Tile& t : plan_tiles(300, 200, chain_halo(chain), {64, 64})) {
      ASSERT_TRUE(cpu::chain_fits_tile(chain, t, 300, 200, mode));
      const TilePlan p = plan_tile(chain, t, 300, 200, mode);
      ASSERT_EQ(p.stages.size(), 3u);
      EXPECT_EQ(p.stages.back().computed, t.out);
      for (std::size_t s = 1; s < p.stages.size(); ++s) {
        const StagePlan& sp = p.stages[s];
        const Rect& stored = p.stages[s - 1].computed;
        EXPECT_EQ(sp.plane.width, p.stages[s - 1].plane.width - chain[s - 1].halo().left - chain[s - 1].halo().right);
        for (int i = 0; i < sp.plane.width; ++i) {
          const int expect = border_index(sp.plane.x + i, 300, mode), m = p.maps[sp.xmap + i];
          EXPECT_EQ(m < 0 ? -1 : stored.x + m, expect);
        }
      }
    }
}

TEST(TilePlan, RefusesAChainThatDoesNotFit) {
  const Chain chain = parse_chain({"box:radius=2", "box:radius=2"});
  const Tile t = plan_tiles(500, 500, chain_halo(chain), {64, 64}).front();
  ASSERT_FALSE(cpu::chain_fits_tile(chain, t, 500, 500, BorderMode::Wrap));
  EXPECT_THROW(plan_tile(chain, t, 500, 500, BorderMode::Wrap), Error);
}

// An FFT stage on its grid (issue 35): the plane reaches every block the tile's output meets, grown
// by the kernel's halo (core's stage_planes, the CPU's planes), whatever the tile; the stage still
// computes only the tile's output.
TEST(TilePlan, FftStagesReachWholeBlocks) {
  std::vector<std::vector<double>> rows(31, std::vector<double>(33, 0.001));
  rows[3][5] = 0.5;  // not separable
  const Chain chain{Stage{"k", {make_convolution(Kernel::from_rows(rows))}}};
  const FftBlocks grid = fft_blocks(chain[0].convs[0].kernel, 700, 500);
  for (const Tile& t : plan_tiles(700, 500, chain_halo(chain), {100, 90})) {
    const TilePlan p = plan_tile(chain, t, 700, 500, BorderMode::Reflect101, {true});
    const StagePlan& s = p.stages[0];
    EXPECT_TRUE(s.on_blocks);
    EXPECT_EQ(s.grid, grid);
    EXPECT_EQ(s.computed, t.out);
    EXPECT_EQ(s.plane, stage_planes(chain, {true}, t.out, 700, 500)[0]);
    const Rect cover = block_cover(grid, t.out, 700, 500);
    EXPECT_EQ(s.plane.x, cover.x - 16);
    EXPECT_EQ(s.plane.right(), cover.right() + 16);
    EXPECT_EQ(s.plane.y, cover.y - 15);
    EXPECT_EQ(s.plane.bottom(), cover.bottom() + 15);
  }
}

}  // namespace
}  // namespace tf::cuda
#endif
