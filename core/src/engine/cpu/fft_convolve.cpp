// The CPU's FFT path for large general 2-D kernels (docs/design.md, contract 2). Per tile it takes
// the same border-synthesized padded plane as direct convolution (cpu::load_padded), a real 2-D
// FFT of every channel at once (FFTW3 single precision), the product with the kernel's spectrum
// (cached per kernel and FFT size), the inverse, a crop to the valid part, then the same
// quantization as every stage. Not bit-identical to direct convolution: within the bound that
// tests/core/test_fft.cpp checks against a float64 reference.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#ifdef TF_HAVE_FFTW
#include <fftw3.h>
#endif

#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cpu {

namespace {

Rect shrunk(const Rect& r, const Halo& h) {
  return {r.x + h.left, r.y + h.top, r.width - h.left - h.right, r.height - h.top - h.bottom};
}

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

int fft_fast_size(int n) {
  for (;; ++n) {
    int m = n;
    for (int p : {2, 3, 5, 7})
      while (m % p == 0) m /= p;
    if (m == 1) return n;
  }
}

bool fft_available() {
#ifdef TF_HAVE_FFTW
  return true;
#else
  return false;
#endif
}

bool uses_fft(const Convolution& conv) {
  return fft_available() && !conv.separable && !conv.box_sum &&
         static_cast<long long>(conv.kernel.width) * conv.kernel.height >= kFftMinTaps;
}

bool stage_uses_fft(const Stage& stage) {
  return stage.combine == Combine::Single && stage.convs.size() == 1 && uses_fft(stage.convs[0]);
}

bool chain_uses_fft(const TileJob& job) {
  return !job.exact && std::any_of(job.chain->begin(), job.chain->end(), stage_uses_fft);
}

void apply_stage_fft(const Stage& stage, const Plane& in, Plane& out) {
#ifdef TF_HAVE_FFTW
  thread_local RealBuffer real;
  thread_local ComplexBuffer spectrum;
  thread_local std::size_t real_size = 0, spectrum_size = 0;
  const Convolution& conv = stage.convs.at(0);
  const Kernel& k = conv.kernel;
  const Halo sh = stage.halo(), h = conv.halo();
  const int dx = sh.left - h.left, dy = sh.top - h.top;
  const int C = in.channels;
  out.reset(shrunk(in.rect, sh), C);
  // The whole padded plane in one transform: no output reads past it, so nothing wraps around.
  const int rows = fft_fast_size(in.rect.height), cols = fft_fast_size(in.rect.width);
  const std::size_t row_len = static_cast<std::size_t>(cols) * C;
  const std::size_t reals = static_cast<std::size_t>(rows) * row_len;
  const std::size_t bins = static_cast<std::size_t>(rows) * (cols / 2 + 1);
  if (real_size < reals) real = alloc_real(real_size = reals);
  if (spectrum_size < bins * C) spectrum = alloc_complex(spectrum_size = bins * C);
  const PlanPair& plans = plans_for(rows, cols, C);
  const auto kernel_spectrum = spectrum_for(k, rows, cols);

  for (int y = 0; y < rows; ++y) {
    float* dst = real.get() + static_cast<std::size_t>(y) * row_len;
    if (y < in.rect.height) {
      std::memcpy(dst, in.row(y), in.stride() * sizeof(float));
      std::fill(dst + in.stride(), dst + row_len, 0.0f);
    } else {
      std::fill(dst, dst + row_len, 0.0f);
    }
  }
  fftwf_execute_dft_r2c(plans.forward, real.get(), spectrum.get());
  const fftwf_complex* kb = kernel_spectrum->bins.get();
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
  for (int y = 0; y < out.rect.height; ++y) {
    const float* src = real.get() + static_cast<std::size_t>(y + dy) * row_len + static_cast<std::size_t>(dx) * C;
    std::copy(src, src + out.stride(), out.row(y));
  }
#else
  (void)stage;
  (void)in;
  (void)out;
  throw Error(ErrorKind::Internal, "built without FFTW: no FFT path");
#endif
}

}  // namespace tf::cpu
