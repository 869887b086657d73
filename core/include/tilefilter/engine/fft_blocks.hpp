// The FFT path's fixed grid of blocks (docs/design.md, contract 2, "The FFT path"): an FFT stage
// transforms its output block by block over a grid anchored at the image's origin, whose block size
// follows from the kernel and the image alone, never from a tile. Each block's transform reads the
// block (cut by the image's edges, never by a tile's) grown by the kernel's halo, so every output
// sample's bits depend only on the image, the kernel and the border: the same for any tile size,
// worker count or number of GPUs of one kind of backend. A tile that cuts a block computes it whole
// and keeps its part; its input plane therefore reaches past its output by more than the halo
// (stage_planes). Pure geometry, shared by the CPU (FFTW) and the GPUs (cuFFT).
#pragma once
#include <vector>

#include "tilefilter/filters/filter.hpp"
#include "tilefilter/image/image.hpp"

namespace tf {

// One FFT stage's grid: output blocks of block_w x block_h at multiples of them from the image's
// origin (the last ones cut by the image's edges), each transformed at cols x rows (at least the
// block grown by the kernel, so nothing wraps around), zeros past the block's input.
struct FftBlocks {
  int block_w = 0, block_h = 0;
  int cols = 0, rows = 0;
  bool operator==(const FftBlocks&) const = default;
};

// The grid for a kernel over an image_w x image_h image: per axis the transform size of
// {2^a, 3*2^a} (up to 512, or 8·taps for wider kernels: a batch of blocks stays a few MiB on a GPU lane, a
// CPU worker's planes near its caches, while wide kernels do not recompute most of each block) that costs
// least per output sample, n·log2(n) / (n - taps + 1); an axis the whole image fits in one block of is
// one block, transformed at the next even 2^a·3^b·5^c·7^d size (cuFFT's odd widths are not batch-invariant).
// 31 taps -> 192 (162-sample blocks), 63 -> 384, 127 -> 768, 255 -> 1536 (1282-sample blocks).
FftBlocks fft_blocks(const Kernel& kernel, int image_w, int image_h);

// Grid blocks by index: [x0, x1) across, [y0, y1) down.
struct BlockSpan {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int count() const { return (x1 - x0) * (y1 - y0); }
};
// The blocks meeting `r` inside the image (none when r misses it).
BlockSpan blocks_meeting(const FftBlocks& grid, const Rect& r, int image_w, int image_h);
// Output block (bx, by), cut by the image's edges.
Rect block_rect(const FftBlocks& grid, int bx, int by, int image_w, int image_h);
// The union of the blocks meeting `r` inside the image; r itself when it misses the image.
Rect block_cover(const FftBlocks& grid, const Rect& r, int image_w, int image_h);

// The input plane of every stage of `chain` for a tile whose output is `out`, last stage first
// resolved: a stage must produce the plane of the one after it (the tile's output for the last);
// a stage with on_blocks[s] computes whole blocks of its grid (fft_blocks of its kernel), so its
// plane covers the blocks meeting that output inside the image, grown by its halo; any other
// stage's plane is its output grown by its halo. planes[0] is what the tile reads from the source.
// With no stage on blocks, planes[0] is `out` grown by chain_halo(chain), as plan_tiles makes tile.in.
std::vector<Rect> stage_planes(const Chain& chain, const std::vector<bool>& on_blocks, const Rect& out, int image_w,
                               int image_h);

}  // namespace tf
