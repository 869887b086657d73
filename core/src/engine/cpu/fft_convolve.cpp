// The CPU's FFT path for large general 2-D kernels (docs/design.md, contract 2). Per tile it takes
// the same border-synthesized padded plane as direct convolution (cpu::load_padded), grown to whole
// blocks of the stage's fixed grid (fft_blocks.hpp), and per block a real 2-D FFT of every channel
// at once (FFTW3 single precision), the product with the kernel's spectrum (cached per kernel and
// FFT size), the inverse, the block's part of the output, then the same quantization as every
// stage. Not bit-identical to direct convolution: within the bound that tests/core/test_fft.cpp
// checks against a float64 reference; the same bits whatever the tiles and workers.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#ifdef TF_HAVE_FFTW
#include <fftw3.h>
#endif

#include "tilefilter/engine/backend_rules.hpp"
#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/engine/fft_blocks.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cpu {

namespace {

#ifdef TF_HAVE_FFTW

struct FftwFree {
  void operator()(void* p) const { fftwf_free(p); }
};
using RealBuffer = std::unique_ptr<float[], FftwFree>;
using ComplexBuffer = std::unique_ptr<fftwf_complex[], FftwFree>;

RealBuffer alloc_real(std::size_t n) { return RealBuffer(fftwf_alloc_real(std::max<std::size_t>(n, 1))); }
ComplexBuffer alloc_complex(std::size_t n) { return ComplexBuffer(fftwf_alloc_complex(std::max<std::size_t>(n, 1))); }

// FFTW's planner is not thread-safe: plans and spectra are made under this mutex, then executed
// from every worker at once with the new-array functions (fftwf_execute_dft_r2c/c2r), on buffers
// from fftwf_malloc (the alignment the plans were made for). FFTW_ESTIMATE: the plan, hence the
// bits, depend only on the sizes, never on timing.
std::mutex& fftw_mutex() {
  static std::mutex m;
  return m;
}

// A forward and an inverse plan for `channels` interleaved real planes of rows x cols.
struct PlanPair {
  int rows = 0, cols = 0, channels = 0;
  fftwf_plan forward = nullptr, inverse = nullptr;
  PlanPair() = default;
  PlanPair(const PlanPair&) = delete;
  PlanPair& operator=(const PlanPair&) = delete;
  ~PlanPair() {
    if (forward) fftwf_destroy_plan(forward);
    if (inverse) fftwf_destroy_plan(inverse);
  }
};

// Plans live as long as the process (a few sizes per job); destroyed with it, after every job.
const PlanPair& plans_for(int rows, int cols, int channels) {
  static std::vector<std::unique_ptr<PlanPair>> cache;
  std::lock_guard lock(fftw_mutex());
  for (const auto& p : cache)
    if (p->rows == rows && p->cols == cols && p->channels == channels) return *p;
  auto p = std::make_unique<PlanPair>();
  p->rows = rows;
  p->cols = cols;
  p->channels = channels;
  const int n[2] = {rows, cols};
  const std::size_t bins = static_cast<std::size_t>(rows) * (cols / 2 + 1) * channels;
  RealBuffer real = alloc_real(static_cast<std::size_t>(rows) * cols * channels);
  ComplexBuffer spectrum = alloc_complex(bins);
  p->forward = fftwf_plan_many_dft_r2c(2, n, channels, real.get(), nullptr, channels, 1, spectrum.get(), nullptr,
                                       channels, 1, FFTW_ESTIMATE);
  p->inverse = fftwf_plan_many_dft_c2r(2, n, channels, spectrum.get(), nullptr, channels, 1, real.get(), nullptr,
                                       channels, 1, FFTW_ESTIMATE);
  if (!p->forward || !p->inverse) throw Error(ErrorKind::Internal, "FFTW could not plan a transform");
  cache.push_back(std::move(p));
  return *cache.back();
}

// conj(FFT(k zero-padded to rows x cols)) / (rows * cols): multiplying a plane's spectrum by it and
// transforming back gives the plane correlated with k (filter2D's sense), normalized.
struct Spectrum {
  int rows = 0, cols = 0, width = 0, height = 0;
  std::vector<float> taps;
  ComplexBuffer bins;
};

std::shared_ptr<const Spectrum> spectrum_for(const Kernel& k, int rows, int cols) {
  static std::vector<std::shared_ptr<const Spectrum>> cache;  // most recent last
  constexpr std::size_t kCached = 8;
  std::lock_guard lock(fftw_mutex());
  for (auto it = cache.begin(); it != cache.end(); ++it) {
    const Spectrum& s = **it;
    if (s.rows == rows && s.cols == cols && s.width == k.width && s.height == k.height && s.taps == k.taps) {
      auto hit = *it;
      cache.erase(it);
      cache.push_back(hit);
      return hit;
    }
  }
  auto s = std::make_shared<Spectrum>();
  s->rows = rows;
  s->cols = cols;
  s->width = k.width;
  s->height = k.height;
  s->taps = k.taps;
  const std::size_t bins = static_cast<std::size_t>(rows) * (cols / 2 + 1);
  s->bins = alloc_complex(bins);
  RealBuffer real = alloc_real(static_cast<std::size_t>(rows) * cols);
  std::fill(real.get(), real.get() + static_cast<std::size_t>(rows) * cols, 0.0f);
  for (int y = 0; y < k.height; ++y)
    for (int x = 0; x < k.width; ++x) real[static_cast<std::size_t>(y) * cols + x] = k.at(x, y);
  fftwf_plan plan = fftwf_plan_dft_r2c_2d(rows, cols, real.get(), s->bins.get(), FFTW_ESTIMATE);
  if (!plan) throw Error(ErrorKind::Internal, "FFTW could not plan a transform");
  fftwf_execute(plan);
  fftwf_destroy_plan(plan);
  const float scale = 1.0f / (static_cast<float>(rows) * static_cast<float>(cols));
  for (std::size_t i = 0; i < bins; ++i) {
    s->bins[i][0] *= scale;
    s->bins[i][1] *= -scale;
  }
  cache.push_back(s);
  if (cache.size() > kCached) cache.erase(cache.begin());
  return s;
}

#endif  // TF_HAVE_FFTW

}  // namespace

void apply_stage_fft(const Stage& stage, const Plane& in, const Rect& out_rect, int image_w, int image_h, Plane& out) {
#ifdef TF_HAVE_FFTW
  thread_local RealBuffer real;
  thread_local ComplexBuffer spectrum;
  thread_local std::size_t real_size = 0, spectrum_size = 0;
  const Kernel& k = stage.convs.at(0).kernel;
  const Halo h = k.halo();
  const int C = in.channels;
  out.reset(out_rect, C);
  std::fill(out.data.begin(), out.data.end(), 0.0f);  // outside the image: re-synthesized or never stored
  const FftBlocks grid = fft_blocks(k, image_w, image_h);
  const int rows = grid.rows, cols = grid.cols;
  const std::size_t row_len = static_cast<std::size_t>(cols) * C;
  const std::size_t reals = static_cast<std::size_t>(rows) * row_len;
  const std::size_t bins = static_cast<std::size_t>(rows) * (cols / 2 + 1);
  if (real_size < reals) real = alloc_real(real_size = reals);
  if (spectrum_size < bins * C) spectrum = alloc_complex(spectrum_size = bins * C);
  const PlanPair& plans = plans_for(rows, cols, C);
  const auto kernel_spectrum = spectrum_for(k, rows, cols);
  const fftwf_complex* kb = kernel_spectrum->bins.get();

  // Every block meeting the output is transformed whole from its own input (the block grown by the
  // halo, zeros past it), whichever tile asks: its bits depend on the image alone.
  const BlockSpan span = blocks_meeting(grid, out_rect, image_w, image_h);
  for (int by = span.y0; by < span.y1; ++by)
    for (int bx = span.x0; bx < span.x1; ++bx) {
      const Rect block = block_rect(grid, bx, by, image_w, image_h);
      const int ix = block.x - h.left - in.rect.x, iy = block.y - h.top - in.rect.y;
      const int iw = block.width + k.width - 1, ih = block.height + k.height - 1;
      if (ix < 0 || iy < 0 || ix + iw > in.rect.width || iy + ih > in.rect.height)
        throw Error(ErrorKind::Internal, "an FFT block's input reaches past the tile's plane");
      const std::size_t span_len = static_cast<std::size_t>(iw) * C;
      for (int y = 0; y < rows; ++y) {
        float* dst = real.get() + static_cast<std::size_t>(y) * row_len;
        if (y < ih) {
          const float* src = in.row(iy + y) + static_cast<std::size_t>(ix) * C;
          std::copy(src, src + span_len, dst);
          std::fill(dst + span_len, dst + row_len, 0.0f);
        } else {
          std::fill(dst, dst + row_len, 0.0f);
        }
      }
      fftwf_execute_dft_r2c(plans.forward, real.get(), spectrum.get());
      fftwf_complex* xb = spectrum.get();
      for (std::size_t i = 0; i < bins; ++i) {
        const float kr = kb[i][0], ki = kb[i][1];
        for (int c = 0; c < C; ++c) {
          float* v = xb[i * C + c];
          const float re = v[0] * kr - v[1] * ki, im = v[0] * ki + v[1] * kr;
          v[0] = re;
          v[1] = im;
        }
      }
      fftwf_execute_dft_c2r(plans.inverse, spectrum.get(), real.get());
      // The block's part of the output: result sample j is output block.x + j.
      const int x0 = std::max(block.x, out_rect.x), x1 = std::min(block.right(), out_rect.right());
      const int y0 = std::max(block.y, out_rect.y), y1 = std::min(block.bottom(), out_rect.bottom());
      for (int y = y0; y < y1; ++y) {
        const float* src =
            real.get() + static_cast<std::size_t>(y - block.y) * row_len + static_cast<std::size_t>(x0 - block.x) * C;
        std::copy(src, src + static_cast<std::size_t>(x1 - x0) * C,
                  out.row(y - out_rect.y) + static_cast<std::size_t>(x0 - out_rect.x) * C);
      }
    }
#else
  (void)stage;
  (void)in;
  (void)out_rect;
  (void)image_w;
  (void)image_h;
  (void)out;
  throw Error(ErrorKind::Internal, "built without FFTW: no FFT path");
#endif
}

}  // namespace tf::cpu
