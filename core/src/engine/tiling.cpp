#include "tilefilter/engine/tiling.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tilefilter/util/error.hpp"

namespace tf {

std::vector<Tile> plan_tiles(int width, int height, const Halo& halo, TileSize tile) {
  const int tile_width = tile.width, tile_height = tile.height;
  if (width <= 0 || height <= 0) throw Error(ErrorKind::InvalidArgument, "cannot tile an empty image");
  if (tile_width <= 0 || tile_height <= 0)
    throw Error(ErrorKind::InvalidArgument, fmt::format("invalid tile size {}x{}", tile_width, tile_height));
  std::vector<Tile> tiles;
  for (int y = 0; y < height; y += tile_height) {
    for (int x = 0; x < width; x += tile_width) {
      Tile t;
      t.index = static_cast<int>(tiles.size());
      t.out = {x, y, std::min(tile_width, width - x), std::min(tile_height, height - y)};
      t.in = {x - halo.left, y - halo.top, t.out.width + halo.left + halo.right, t.out.height + halo.top + halo.bottom};
      tiles.push_back(t);
    }
  }
  return tiles;
}

std::size_t tile_working_set(TileSize out, const Format& fmt, const Halo& halo) {
  const std::size_t pw = static_cast<std::size_t>(out.width) + halo.left + halo.right;
  const std::size_t ph = static_cast<std::size_t>(out.height) + halo.top + halo.bottom;
  const std::size_t padded = pw * ph * fmt.channels;
  return padded * bytes_per_sample(fmt.type) + 2 * padded * sizeof(float) +
         static_cast<std::size_t>(out.width) * out.height * fmt.pixel_bytes();
}

int tile_side_for_budget(std::size_t budget_bytes, const Format& fmt, const Halo& halo, int align) {
  // Working set grows with side^2; solve roughly, then step down until it fits.
  const double per_pixel = fmt.channels * (bytes_per_sample(fmt.type) * 2.0 + 2.0 * sizeof(float));
  int side = static_cast<int>(std::sqrt(static_cast<double>(budget_bytes) / per_pixel));
  side = std::max(16, side / align * align);
  while (side > 16 && tile_working_set({side, side}, fmt, halo) > budget_bytes) side = std::max(16, side - align);
  return side;
}

TileSize strip_tile_for_budget(int image_width, std::size_t budget_bytes, const Format& fmt, const Halo& halo,
                               long long target_pixels, bool halo_rows_carried) {
  const int side = tile_side_for_budget(budget_bytes, fmt, halo);
  if (side < 1024 || image_width <= 0) return {side, side};
  auto round_up = [](long long v, int to) { return static_cast<int>((v + to - 1) / to * to); };
  const int min_rows = round_up(std::max(256, halo_rows_carried ? 0 : 16 * (halo.top + halo.bottom)), 32);
  const long long target = std::min(target_pixels, static_cast<long long>(side) * side);
  // As many strips side by side as the width needs at min_rows, then equal widths.
  const long long across = std::max<long long>(1, (image_width + target / min_rows - 1) / (target / min_rows));
  const int width = std::min(image_width, round_up((image_width + across - 1) / across, 32));
  int rows = std::max(min_rows, round_up(target / width, 32));
  while (rows > 32 && tile_working_set({width, rows}, fmt, halo) > budget_bytes) rows -= 32;
  if (tile_working_set({width, rows}, fmt, halo) > budget_bytes) return {side, side};
  return {width, rows};
}

TileSize halo_tile_for_budget(int image_width, int image_height, std::size_t budget_bytes, const Format& fmt,
                              const Halo& halo, int side, int halo_factor) {
  const int fits = tile_side_for_budget(budget_bytes, fmt, halo);
  const long long across = std::max(halo.left + halo.right, halo.top + halo.bottom);
  const long long grown = (static_cast<long long>(halo_factor) * across + 31) / 32 * 32;
  if (grown <= side || fits <= side || image_width <= 0 || image_height <= 0)
    return {std::min(side, fits), std::min(side, fits)};
  const int limit = static_cast<int>(std::min<long long>(grown, fits));
  // Equal tiles per axis: as few as `limit` allows.
  auto even = [limit](int n) {
    const int count = (n + limit - 1) / limit;
    return std::min(limit, ((n + count - 1) / count + 31) / 32 * 32);
  };
  return {even(image_width), even(image_height)};
}

}  // namespace tf
