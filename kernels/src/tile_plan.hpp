// The host-side plan of one tile on a GPU (pure C++, no CUDA): which source rectangles to upload,
// where every stage of the chain reads and writes, and the border maps through which the kernels
// read (docs/design.md, contract 1: border pixels are synthesized on the device from these maps, built here with
// core's border_index(); kernels never see image edges).
//
// Only the in-image pixels a tile needs are uploaded, packed into a compact buffer: one rectangle
// for most tiles; two or more per axis for wrap borders, whose halo comes from the far edge.
// Every stage computes only the part of its output that lies inside the image; the next stage
// reads the rest through its maps, exactly as cpu::resynthesize_border rewrites it.
#pragma once
#include <vector>

#include "tilefilter/engine/fft_blocks.hpp"
#include "tilefilter/engine/tiling.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/image/border.hpp"

namespace tf::cuda {

// Source interval [source, source + length) of one axis, stored at `compact` in the upload buffer.
struct AxisRun {
  int source = 0, length = 0, compact = 0;
  bool operator==(const AxisRun&) const = default;
};

struct ConvPlacement {
  int origin_x = 0, origin_y = 0;  // plane position of the window of region pixel (0, 0)
};

struct StagePlan {
  Rect plane;     // input plane in image coordinates (may extend past the image)
  Rect computed;  // output pixels computed: the stage's output rectangle inside the image
  // An FFT stage on its fixed grid (fft_blocks.hpp): the plane covers every block meeting `computed`
  // grown by the kernel's halo; each such block is transformed whole and its part of `computed` kept.
  bool on_blocks = false;
  FftBlocks grid;
  int xmap = 0;  // offset of the plane's column map in TilePlan::maps (plane.width entries)
  int ymap = 0;  // offset of its row map (plane.height entries)
  std::vector<ConvPlacement> convs;
  // The longest span of each map that is a plain shift: map[i] = i + shift for lo <= i < hi.
  struct Span {
    int lo = 0, hi = 0, shift = 0;
  } x_span, y_span;
};

struct TilePlan {
  int image_w = 0, image_h = 0;
  std::vector<AxisRun> columns, rows;  // uploaded source runs
  int upload_width = 0, upload_height = 0;
  std::vector<StagePlan> stages;
  std::vector<int> maps;  // buffer column/row for every plane position, -1 = the constant value
  std::size_t upload_pixels() const { return static_cast<std::size_t>(upload_width) * upload_height; }
};

// Plans `tile` for `chain` over an image of image_w x image_h. Throws tf::Error (Internal) when a
// stage's border would need pixels the tile does not hold (the scheduler prevents that with
// chain_fits_tile by running such chains filter by filter). `on_blocks[s]`: stage s runs on
// its FFT grid (stage_planes: the planes then reach past tile.in); none when empty.
TilePlan plan_tile(const Chain& chain, const Tile& tile, int image_w, int image_h, BorderMode mode,
                   const std::vector<bool>& on_blocks = {});

}  // namespace tf::cuda
