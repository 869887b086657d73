#include "tile_plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tilefilter/util/error.hpp"

namespace tf::cuda {

namespace {

Rect intersect_image(const Rect& r, int w, int h) {
  const int x0 = std::max(r.x, 0), y0 = std::max(r.y, 0);
  const int x1 = std::min(r.right(), w), y1 = std::min(r.bottom(), h);
  return {x0, y0, std::max(0, x1 - x0), std::max(0, y1 - y0)};
}

// Source runs of one axis of the first stage's plane, and its map into the compact buffer. The
// positions inside the image read themselves (a shift by `origin`); only those past an edge go
// through border_index: a halo's worth, more only for planes wider than the image. A lane plans its
// tile while the others' copies run, but the first tiles of a job are planned before any copy
// starts: element by element (a border_index, a mark and a run lookup for each of a full-width
// strip's 8200 columns) this took ~40 us a strip on the build machine, most of the 0.06 ms before a
// host-resident job's first upload on the GPU machine.
std::vector<AxisRun> plan_axis(int origin, int length, int n, BorderMode mode, std::vector<int>& map) {
  const int inside_lo = std::clamp(-origin, 0, length), inside_hi = std::clamp(n - origin, inside_lo, length);
  std::vector<int> outside;  // sources of the positions before inside_lo, then of those from inside_hi on
  outside.reserve(static_cast<std::size_t>(length - (inside_hi - inside_lo)));
  for (int i = 0; i < inside_lo; ++i) outside.push_back(border_index(origin + i, n, mode));
  for (int i = inside_hi; i < length; ++i) outside.push_back(border_index(origin + i, n, mode));

  // The sources used, as runs: the inside span and the outside sources, merged where they touch.
  std::vector<AxisRun> spans;
  if (inside_lo < inside_hi) spans.push_back({origin + inside_lo, inside_hi - inside_lo, 0});
  for (int v : outside)
    if (v >= 0) spans.push_back({v, 1, 0});
  std::sort(spans.begin(), spans.end(), [](const AxisRun& a, const AxisRun& b) { return a.source < b.source; });
  std::vector<AxisRun> runs;
  for (const AxisRun& r : spans) {
    if (!runs.empty() && r.source <= runs.back().source + runs.back().length) {
      AxisRun& last = runs.back();
      last.length = std::max(last.length, r.source + r.length - last.source);
    } else {
      runs.push_back(r);
    }
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

  auto where = [&](int s) {
    if (s >= 0)
      for (const auto& r : runs)
        if (s >= r.source && s < r.source + r.length) return r.compact + s - r.source;
    return -1;
  };
  const std::size_t first = map.size();
  map.resize(first + static_cast<std::size_t>(length));
  int* m = map.data() + first;
  std::size_t k = 0;
  for (int i = 0; i < inside_lo; ++i) m[i] = where(outside[k++]);
  if (inside_lo < inside_hi) {
    const int shift = where(origin + inside_lo) - inside_lo;  // the inside span lies in one run
    for (int i = inside_lo; i < inside_hi; ++i) m[i] = i + shift;
  }
  for (int i = inside_hi; i < length; ++i) m[i] = where(outside[k++]);
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

TilePlan plan_tile(const Chain& chain, const Tile& tile, int image_w, int image_h, BorderMode mode,
                   const std::vector<bool>& on_blocks) {
  TilePlan plan;
  plan.image_w = image_w;
  plan.image_h = image_h;
  // Every stage's plane, then the chain's output: tile.in shrunk stage by stage, or reaching whole
  // blocks for FFT stages.
  std::vector<Rect> planes;
  if (std::find(on_blocks.begin(), on_blocks.end(), true) != on_blocks.end()) {
    planes = stage_planes(chain, on_blocks, tile.out, image_w, image_h);
    planes.push_back(tile.out);
  } else {
    Rect r = tile.in;
    for (const Stage& stage : chain) {
      planes.push_back(r);
      r = shrink(r, stage.halo());
    }
    planes.push_back(r);
  }
  std::size_t map_entries = 0;  // a column and a row map for every stage's plane
  for (std::size_t s = 0; s < chain.size(); ++s)
    map_entries += static_cast<std::size_t>(planes[s].width) + static_cast<std::size_t>(planes[s].height);
  plan.maps.reserve(map_entries);
  Rect stored;  // the previous stage's computed region
  for (std::size_t s = 0; s < chain.size(); ++s) {
    const Stage& stage = chain[s];
    const Rect plane = planes[s];
    StagePlan sp;
    sp.plane = plane;
    sp.on_blocks = s < on_blocks.size() && on_blocks[s];
    if (sp.on_blocks) sp.grid = fft_blocks(stage.convs.at(0).kernel, image_w, image_h);
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
    const Rect out = shrink(plane, h);  // the window placement's reference
    sp.computed = intersect_image(planes[s + 1], image_w, image_h);
    for (const auto& conv : stage.convs) {
      const Halo ch = conv.halo();
      sp.convs.push_back({sp.computed.x - out.x + h.left - ch.left, sp.computed.y - out.y + h.top - ch.top});
    }
    plan.stages.push_back(std::move(sp));
    stored = plan.stages.back().computed;
  }
  if (!(stored == tile.out))
    throw Error(ErrorKind::Internal, fmt::format("tile {}: chain output {}x{} at ({},{}) is not the tile", tile.index,
                                                 stored.width, stored.height, stored.x, stored.y));
  return plan;
}

}  // namespace tf::cuda
