// The CPU backend: the gold reference every other backend must match bit for bit, threaded by
// running one CpuDevice per worker. Arithmetic (docs/design.md, contract 2): float32 accumulation with
// fused multiply-add, taps in a fixed order (row-major for 2-D kernels; row pass then column pass
// for separable ones, through a float32 intermediate); integer results rounded to nearest-even and
// saturated after every stage of a chain.
#pragma once
#include <string>
#include <vector>

#include "tilefilter/engine/backend_rules.hpp"
#include "tilefilter/engine/device.hpp"

namespace tf::cpu {

// A float32 plane covering `rect` in image coordinates (which may extend past the image).
struct Plane {
  Rect rect;
  int channels = 0;
  std::vector<float> data;
  std::size_t stride() const { return static_cast<std::size_t>(rect.width) * channels; }
  float* row(int y) { return data.data() + static_cast<std::size_t>(y) * stride(); }
  const float* row(int y) const { return data.data() + static_cast<std::size_t>(y) * stride(); }
  void reset(const Rect& r, int c) {
    rect = r;
    channels = c;
    data.resize(static_cast<std::size_t>(r.width) * r.height * c);
  }
};

// Reads src over p.rect, synthesizing outside pixels with the border mode.
void load_padded(const ImageView& src, const Rect& rect, const Border& border, Plane& out);
// One stage: `in` covers R, `out` is resized to R shrunk by stage.halo(). `integer_samples`: the
// plane holds u8/u16 values (box_sum convolutions then sum exactly in integers).
void apply_stage(const Stage& stage, const Plane& in, Plane& out, bool integer_samples);
// Round to nearest-even and saturate for integer types; nothing for f32.
void quantize(Plane& p, PixelType type);
// Rewrites every position of p that lies outside the image from the positions inside it, as the
// border mode would pad the image. Every source position must lie inside p (see chain_fits_tile).
void resynthesize_border(Plane& p, int image_width, int image_height, const Border& border);

// The whole CPU path for one tile: direct convolution, or FFT stages where chain_uses_fft(job).
void filter_tile(const TileJob& job, const Tile& tile);
// True when filter_tile runs the job row by row, straight from the source to the destination: a
// chain of one separable convolution (FMAs). It then holds the ring of the row pass's rows (taps + 1
// rows of the tile's width) and two output rows, no plane of the tile.
bool streams_rows(const TileJob& job);
// Host bytes a CPU worker holds to filter a tile of `out` pixels of this job: tile_working_set's
// padded tile and float planes, or the rows above where the job streams rows.
std::size_t worker_bytes(const TileJob& job, TileSize out);

// The vector path the convolution loops take on this machine: a Highway target with native FMA
// ("AVX2", "AVX3", "NEON", ...), or "scalar" (std::fma loops: builds without Highway, CPUs without
// FMA, or after set_simd_enabled(false)). Both give the same bits (docs/design.md, contract 2).
std::string simd_target();
// Tests and benchmarks: false forces the scalar loops, true (the default) allows the vector ones.
// Set it only while no job runs.
void set_simd_enabled(bool enabled);

// The rules this backend shares with the GPUs (the border value, chain_fits_tile, the FFT choice)
// are engine/backend_rules.hpp's; these names keep older callers building.
using tf::chain_fits_tile;
using tf::chain_uses_fft;
using tf::fft_available;
using tf::fft_fast_size;
using tf::kFftMinTaps;
using tf::quantized_border_value;
using tf::stage_uses_fft;
using tf::uses_fft;

// One stage through the FFT, block by block over its fixed grid (fft_blocks.hpp): `out` is reset to
// `out_rect` and holds, inside the image, the blocks' results (not quantized), 0 outside it. `in` must
// cover every block meeting out_rect inside the image grown by the kernel's halo (stage_planes). The
// stage must be Combine::Single with a convolution that uses_fft().
void apply_stage_fft(const Stage& stage, const Plane& in, const Rect& out_rect, int image_w, int image_h, Plane& out);

// A CPU worker as a Device. `slowdown` > 1 makes it deliberately slow (tests of load balancing).
DevicePtr make_cpu_device(int ordinal, double slowdown = 1.0);

}  // namespace tf::cpu
