// The tiler: a pure function from image size, footprint and a tile size to tiles. A tile's input
// rectangle is its output rectangle grown by the halo; it may extend past the image, where the
// border mode synthesizes pixels (docs/design.md, contract 1).
#pragma once
#include <cstddef>
#include <vector>

#include "tilefilter/filters/filter.hpp"
#include "tilefilter/image/image.hpp"

namespace tf {

struct TileSize {
  int width = 0, height = 0;
  bool operator==(const TileSize&) const = default;
};

struct Tile {
  int index = 0;
  Rect out;  // inside the image
  Rect in;   // out grown by the halo, may leave the image
};

// `r` less `h` on each side: what a stage of halo `h` makes of input rectangle `r`.
inline Rect shrink(const Rect& r, const Halo& h) {
  return {r.x + h.left, r.y + h.top, r.width - h.left - h.right, r.height - h.top - h.bottom};
}

// Tiles of at most `tile` output pixels, row by row from the top left; edge tiles are smaller.
std::vector<Tile> plan_tiles(int width, int height, const Halo& halo, TileSize tile);

// Largest square-ish tile whose working set (padded input, float intermediates, output) fits
// `budget_bytes`, rounded down to `align` pixels, at least 16. Used for device memory budgets.
int tile_side_for_budget(std::size_t budget_bytes, const Format& fmt, const Halo& halo, int align = 32);

// Full-width strips of about `target_pixels` output pixels for an image `image_width` wide: at
// least 256 rows and, unless `halo_rows_carried`, 16 times the vertical halo (so re-sent halo rows
// cost at most ~6% extra), as wide as the image (an image wider than target_pixels / those rows gets
// equal strips side by side), within `budget_bytes`. A square tile_side_for_budget() tile when the
// budget holds less than a 1024² one. For PCIe-bound devices: each uploaded row is one contiguous
// run of host memory. `halo_rows_carried`: the device keeps the rows a strip shares with the one
// above it (Device::lanes_share_rows), so a band sends its halo rows once, not every strip.
TileSize strip_tile_for_budget(int image_width, std::size_t budget_bytes, const Format& fmt, const Halo& halo,
                               long long target_pixels, bool halo_rows_carried = false);

// Square tiles of `side` pixels for compute-bound devices, grown to `halo_factor` times the halo
// (the larger of its two axes) when that is more, so halo pixels, which are uploaded and whose
// rows a separable row pass computes once per tile, cost at most about 1 / halo_factor extra.
// Grown tiles are split evenly over an `image_width` x `image_height` image (rounded up to 32
// pixels) rather than leaving a thin remainder tile with a whole halo of its own. Within
// `budget_bytes`: never larger than tile_side_for_budget().
TileSize halo_tile_for_budget(int image_width, int image_height, std::size_t budget_bytes, const Format& fmt,
                              const Halo& halo, int side, int halo_factor);

// Bytes a device needs to process one tile of the given output size (padded input in the pixel
// type, two float work buffers of the padded size, output in the pixel type).
std::size_t tile_working_set(TileSize out, const Format& fmt, const Halo& halo);

}  // namespace tf
