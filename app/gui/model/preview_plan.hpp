// What the live preview computes first. Pure functions, no Qt widgets: the engine asks them and the
// tests check them.
//   - zoomed in (an image pixel covers most of a screen pixel): the visible region at full
//     resolution, grown by the chain's halo — exact, the same bits as the full job there;
//   - zoomed out: a screen-sized proxy, the visible region of a pyramid level with the spatial
//     parameters (sigma, radius) scaled down by the level's factor so it looks like the result;
//   - then always the whole image at full resolution, which replaces both.
// And on which devices the first pass runs: the CPU workers, when the chosen devices include a GPU and
// the pass is small (first_pass_on_cpu).
#pragma once
#include <vector>

#include "filter_entry.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/image/image.hpp"

namespace tf::gui {

enum class PreviewPass { Region, Proxy, Full };

struct PreviewView {
  int image_width = 0, image_height = 0;
  Rect visible;      // in image pixels (any rectangle; clipped here)
  double scale = 1;  // screen pixels per image pixel
  int pyramid_levels = 1;
  BorderMode border = BorderMode::Reflect101;
};

struct PreviewStep {
  PreviewPass pass = PreviewPass::Full;
  int level = 0;  // pyramid level: the step works on an image 2^level times smaller
  Rect visible;   // in that level's pixels, clipped to it
};

// Images up to this many pixels go straight to the full-resolution job.
constexpr long long kSmallPreviewPixels = 2'000'000;

std::vector<PreviewStep> plan_preview(const PreviewView& view);

// A first pass the CPU workers may take, in seconds of core's estimate of their time
// (tf::choose_cpu_for_small_work's cpu_s): a screen-sized proxy or region at the σ a photo is
// previewed at (≤ 5) is estimated at well under a millisecond on 16 cores.
constexpr double kCpuFirstPassSeconds = 0.002;

// Whether a first pass (region or proxy) of `pixels` pixels with `channels` channels a pixel runs on
// `cores` CPU workers instead of the chosen devices: only when these include a GPU (`with_gpu`), the
// chain takes no FFT path (FFTW's bits are not cuFFT's; direct convolution gives the same bits on every
// backend, docs/design.md, contract 2) and core's estimate of the pass on the CPU is within
// kCpuFirstPassSeconds. A GPU job has a fixed cost per preview that a small pass does not repay (its
// pageable region staged through pinned memory, uploaded, filtered, downloaded and waited for), and
// the CPU workers are idle while the GPUs work anyway.
bool first_pass_on_cpu(const Chain& chain, long long pixels, int channels, bool with_gpu, int cores);

// `visible` grown by `halo` and clipped to a width x height image: what to filter so that
// `visible` comes out exactly as in the whole image.
Rect grow_clipped(const Rect& visible, const Halo& halo, int width, int height);
// A copy of `r` of `src` as an image of its own (a filter then treats r's edges as image edges,
// which is why regions are grown by the halo first, and the result cropped back to `visible`).
Image crop(const Image& src, const Rect& r);
// Level k's rectangle covering `r` of the base image (rounded outwards, clipped).
Rect rect_at_level(const Rect& r, int level, int level_width, int level_height);

// Spatial parameters (sigma, radius: "in pixels") divided by `factor`, within their ranges.
std::vector<FilterEntry> scaled_for_proxy(const std::vector<FilterEntry>& chain, int factor);

}  // namespace tf::gui
