#include "tile_plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tilefilter/error.hpp"

namespace tf::cuda {

namespace {

Rect shrink(const Rect& r, const Halo& h) {
  return {r.x + h.left, r.y + h.top, r.width - h.left - h.right, r.height - h.top - h.bottom};
}

Rect intersect_image(const Rect& r, int w, int h) {
  const int x0 = std::max(r.x, 0), y0 = std::max(r.y, 0);
  const int x1 = std::min(r.right(), w), y1 = std::min(r.bottom(), h);
  return {x0, y0, std::max(0, x1 - x0), std::max(0, y1 - y0)};
}

// Source runs of one axis of the first stage's plane, and its map into the compact buffer.
std::vector<AxisRun> plan_axis(int origin, int length, int n, BorderMode mode, std::vector<int>& map) {
  std::vector<int> src(length);
  int lo = n, hi = -1;
  for (int i = 0; i < length; ++i) {
    src[i] = border_index(origin + i, n, mode);
    if (src[i] >= 0) {
      lo = std::min(lo, src[i]);
      hi = std::max(hi, src[i]);
    }
  }
  // The source positions used, marked over their span rather than sorted: a lane plans its tile
  // while the others' copies run, but the first tile of a job is planned before any copy starts
  // (sorting a full-width strip's 8200 columns took ~100 us of that on the build machine).
  std::vector<char> used(hi >= lo ? hi - lo + 1 : 0, 0);
  for (int v : src)
    if (v >= 0) used[v - lo] = 1;
  std::vector<AxisRun> runs;
  for (int k = 0; k < static_cast<int>(used.size()); ++k) {
    if (!used[k]) continue;
    const int s = lo + k;
    if (!runs.empty() && runs.back().source + runs.back().length == s) ++runs.back().length;
    else runs.push_back({s, 1, 0});
  }
  // Wrap borders give two runs per axis at most; anything more fragmented goes as one hull.
  if (runs.size() > 3) {
    const int lo = runs.front().source, hi = runs.back().source + runs.back().length;
    runs.assign(1, {lo, hi - lo, 0});
  }
  int compact = 0;
  for (auto& r : runs) {
    r.compact = compact;
    compact += r.length;
  }
  for (int i = 0; i < length; ++i) {
    int m = -1;
    if (src[i] >= 0)
      for (const auto& r : runs)
        if (src[i] >= r.source && src[i] < r.source + r.length) {
          m = r.compact + src[i] - r.source;
          break;
        }
    map.push_back(m);
  }
  return runs;
}

// Map of one axis of a later stage's plane into the previous stage's computed region.
void map_axis(int origin, int length, int n, BorderMode mode, int stored_origin, int stored_length,
              std::vector<int>& map, const std::string& what) {
  for (int i = 0; i < length; ++i) {
    const int s = border_index(origin + i, n, mode);
    if (s < 0) {
      map.push_back(-1);
      continue;
    }
    const int m = s - stored_origin;
    if (m < 0 || m >= stored_length)
      throw Error(ErrorKind::Internal, fmt::format("{}: border source {} outside the tile's intermediate", what, s));
    map.push_back(m);
  }
}

StagePlan::Span longest_shift(const std::vector<int>& maps, int offset, int length) {
  StagePlan::Span best;
  for (int i = 0; i < length;) {
    const int m = maps[offset + i];
    int j = i + 1;
    if (m >= 0)
      while (j < length && maps[offset + j] == m + (j - i)) ++j;
    if (m >= 0 && j - i > best.hi - best.lo) best = {i, j, m - i};
    i = j;
  }
  return best;
}

}  // namespace

TilePlan plan_tile(const Chain& chain, const Tile& tile, int image_w, int image_h, BorderMode mode) {
  TilePlan plan;
  Rect plane = tile.in;
  Rect stored;  // the previous stage's computed region
  for (std::size_t s = 0; s < chain.size(); ++s) {
    const Stage& stage = chain[s];
    StagePlan sp;
    sp.plane = plane;
    sp.xmap = static_cast<int>(plan.maps.size());
    if (s == 0) {
      plan.columns = plan_axis(plane.x, plane.width, image_w, mode, plan.maps);
      sp.ymap = static_cast<int>(plan.maps.size());
      plan.rows = plan_axis(plane.y, plane.height, image_h, mode, plan.maps);
      for (const auto& r : plan.columns) plan.upload_width += r.length;
      for (const auto& r : plan.rows) plan.upload_height += r.length;
    } else {
      map_axis(plane.x, plane.width, image_w, mode, stored.x, stored.width, plan.maps, stage.name);
      sp.ymap = static_cast<int>(plan.maps.size());
      map_axis(plane.y, plane.height, image_h, mode, stored.y, stored.height, plan.maps, stage.name);
    }
    sp.x_span = longest_shift(plan.maps, sp.xmap, plane.width);
    sp.y_span = longest_shift(plan.maps, sp.ymap, plane.height);
    const Halo h = stage.halo();
    const Rect out = shrink(plane, h);
    sp.computed = intersect_image(out, image_w, image_h);
    for (const auto& conv : stage.convs) {
      const Halo ch = conv.halo();
      sp.convs.push_back({sp.computed.x - out.x + h.left - ch.left, sp.computed.y - out.y + h.top - ch.top});
    }
    plan.stages.push_back(std::move(sp));
    stored = plan.stages.back().computed;
    plane = out;
  }
  if (!(stored == tile.out))
    throw Error(ErrorKind::Internal, fmt::format("tile {}: chain output {}x{} at ({},{}) is not the tile", tile.index,
                                                 stored.width, stored.height, stored.x, stored.y));
  return plan;
}

}  // namespace tf::cuda
