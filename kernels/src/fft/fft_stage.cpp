#include "fft/fft_stage.hpp"

#include <algorithm>

#include <fmt/format.h>

#ifdef TF_HAVE_CUFFT
#include <cufft.h>
#endif

#include "fft/fft_kernels.hpp"
#include "tilefilter/engine/backend_rules.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {

namespace {

std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

std::size_t plane_floats(const FftShape& s) { return static_cast<std::size_t>(s.rows) * s.cols; }
std::size_t plane_bytes(const FftShape& s) {
  return plane_floats(s) * sizeof(float) + static_cast<std::size_t>(s.rows) * (s.cols / 2 + 1) * 2 * sizeof(float);
}
std::size_t plane_bins(const FftShape& s) { return static_cast<std::size_t>(s.rows) * (s.cols / 2 + 1); }

#ifdef TF_HAVE_CUFFT
void check(cufftResult r, const char* what) {
  if (r != CUFFT_SUCCESS)
    throw Error(ErrorKind::Device, fmt::format("cuFFT: {} failed (cufftResult {})", what, static_cast<int>(r)));
}

// A 2-D plan of `shape`, `planes` planes one after another, with no work area of its own.
int make_plan(const FftShape& shape, cufftType type, std::size_t* work) {
  cufftHandle h = 0;
  check(cufftCreate(&h), "cufftCreate");
  try {
    check(cufftSetAutoAllocation(h, 0), "cufftSetAutoAllocation");
    long long n[2] = {shape.rows, shape.cols};
    const long long reals = static_cast<long long>(plane_floats(shape)),
                    bins = static_cast<long long>(plane_bins(shape));
    const bool forward = type == CUFFT_R2C;
    check(cufftMakePlanMany64(h, 2, n, nullptr, 1, forward ? reals : bins, nullptr, 1, forward ? bins : reals, type,
                              shape.planes, work),
          "cufftMakePlanMany64");
  } catch (...) {
    cufftDestroy(h);
    throw;
  }
  return h;
}
#endif

}  // namespace

bool fft_built() {
#ifdef TF_HAVE_CUFFT
  return true;
#else
  return false;
#endif
}

bool fft_stage(const Stage& stage) {
  if (!fft_built() || !stage_uses_fft(stage)) return false;
  const Kernel& k = stage.convs[0].kernel;
  return static_cast<long long>(k.width) * k.height >= kGpuFftMinTaps;
}

int fft_batch_blocks(const FftBlocks& grid, int channels) {
  constexpr std::size_t kBatchBytes = std::size_t{16} << 20;
  const std::size_t block = plane_bytes({grid.rows, grid.cols, 1}) * static_cast<std::size_t>(std::max(channels, 1));
  return static_cast<int>(std::clamp<std::size_t>(kBatchBytes / block, 1, 64));
}

FftShape fft_shape(const FftBlocks& grid, int channels) {
  return {grid.rows, grid.cols, fft_batch_blocks(grid, channels) * channels};
}

FftLayout fft_layout(const FftShape& shape, std::size_t work_bytes) {
  FftLayout l;
  l.real = 0;
  l.bins = aligned(plane_floats(shape) * shape.planes * sizeof(float));
  l.work = l.bins + aligned(plane_bins(shape) * shape.planes * 2 * sizeof(float));
  l.total = l.work + aligned(work_bytes);
  return l;
}

std::size_t fft_spectrum_bytes(const FftShape& shape) { return plane_bins(shape) * 2 * sizeof(float); }

std::size_t fft_bytes_estimate(const Kernel& kernel, int image_w, int image_h, int channels) {
  const FftShape s = fft_shape(fft_blocks(kernel, image_w, image_h), channels);
  return fft_layout(s, plane_bins(s) * s.planes * 2 * sizeof(float)).total + fft_spectrum_bytes(s);
}

FftPlans::~FftPlans() {
#ifdef TF_HAVE_CUFFT
  for (const auto& p : pairs_) {
    cufftDestroy(p->forward);
    cufftDestroy(p->inverse);
  }
#endif
}

const FftPlans::Pair& FftPlans::get(const FftShape& shape) {
#ifdef TF_HAVE_CUFFT
  for (auto it = pairs_.begin(); it != pairs_.end(); ++it)
    if ((*it)->shape == shape) {
      std::rotate(it, it + 1, pairs_.end());
      return *pairs_.back();
    }
  // A job meets a few shapes (interior, edge and corner tiles); more come from other tile sizes.
  constexpr std::size_t kKept = 16;
  if (pairs_.size() >= kKept) {
    cufftDestroy(pairs_.front()->forward);
    cufftDestroy(pairs_.front()->inverse);
    pairs_.erase(pairs_.begin());
  }
  auto p = std::make_unique<Pair>();
  p->shape = shape;
  std::size_t wf = 0, wi = 0;
  p->forward = make_plan(shape, CUFFT_R2C, &wf);
  try {
    p->inverse = make_plan(shape, CUFFT_C2R, &wi);
  } catch (...) {
    cufftDestroy(p->forward);
    throw;
  }
  p->work = std::max(wf, wi);
  pairs_.push_back(std::move(p));
  return *pairs_.back();
#else
  (void)shape;
  throw Error(ErrorKind::Internal, "built without cuFFT: no GPU FFT path");
#endif
}

std::size_t FftPlans::work_bytes(const FftShape& shape) {
  const std::size_t own = get(shape).work;
  return std::max(own, get({shape.rows, shape.cols, 1}).work);
}

std::shared_ptr<const FftSpectra::Entry> FftSpectra::get(const Kernel& kernel, const float* d_taps,
                                                         const FftShape& stage_shape, FftPlans& plans,
                                                         void* lane_buffer, int device, cudaStream_t stream) {
  const FftShape shape{stage_shape.rows, stage_shape.cols, 1};
  std::lock_guard lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const Entry& e = **it;
    if (e.shape == shape && e.kw == kernel.width && e.kh == kernel.height && e.taps == kernel.taps) {
      std::rotate(it, it + 1, entries_.end());
      return entries_.back();
    }
  }
#ifdef TF_HAVE_CUFFT
  auto e = std::make_shared<Entry>();
  e->shape = shape;
  e->kw = kernel.width;
  e->kh = kernel.height;
  e->taps = kernel.taps;
  e->bins.reserve(fft_spectrum_bytes(shape), device);
  const FftPlans::Pair& plan = plans.get(shape);
  const FftLayout layout = fft_layout(stage_shape, 0);
  auto* base = static_cast<unsigned char*>(lane_buffer);
  auto* plane = reinterpret_cast<float*>(base + layout.real);
  fft::place_kernel(d_taps, kernel.width, kernel.height, plane, shape.rows, shape.cols, stream);
  check(cufftSetStream(plan.forward, stream), "cufftSetStream");
  check(cufftSetWorkArea(plan.forward, base + layout.work), "cufftSetWorkArea");
  check(cufftExecR2C(plan.forward, plane, e->bins.as<cufftComplex>()), "cufftExecR2C (kernel)");
  const float scale = 1.0f / (static_cast<float>(shape.rows) * static_cast<float>(shape.cols));
  fft::conj_scale(e->bins.as<float2>(), plane_bins(shape), scale, stream);
  // Other lanes read it on their own streams: it must be complete before anyone may find it.
  TF_CUDA_CHECK(cudaStreamSynchronize(stream));
  constexpr std::size_t kKept = 8;
  if (entries_.size() >= kKept) entries_.erase(entries_.begin());  // a lane still using it holds a reference
  entries_.push_back(std::move(e));
  return entries_.back();
#else
  (void)d_taps;
  (void)plans;
  (void)lane_buffer;
  (void)device;
  (void)stream;
  throw Error(ErrorKind::Internal, "built without cuFFT: no GPU FFT path");
#endif
}

std::size_t FftSpectra::bytes() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const auto& e : entries_) n += e->bins.capacity();
  return n;
}

void FftSpectra::clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
}

std::shared_ptr<const FftSpectra::Entry> run_fft_stage(const ConvArgs& a, const FftBlockArgs& blocks, SampleType type,
                                                       int channels, const Kernel& kernel, const FftLane& lane,
                                                       cudaStream_t stream) {
#ifdef TF_HAVE_CUFFT
  const BlockSpan span = blocks_meeting(blocks.grid, blocks.computed, blocks.image_w, blocks.image_h);
  if (a.width <= 0 || a.height <= 0 || span.count() == 0) return nullptr;
  const FftShape shape = fft_shape(blocks.grid, channels);
  const int batch = shape.planes / channels;
  const FftPlans::Pair plan = lane.plans->get(shape);  // a copy: making the spectrum's plans may reorder the cache
  const FftLayout layout = fft_layout(shape, 0);
  auto* base = static_cast<unsigned char*>(lane.buffer);
  auto* planes = reinterpret_cast<float*>(base + layout.real);
  auto* bins = reinterpret_cast<float2*>(base + layout.bins);
  auto spectrum = lane.spectra->get(kernel, a.taps, shape, *lane.plans, lane.buffer, lane.device, stream);
  fft::BlockBatch b;
  b.block_w = blocks.grid.block_w;
  b.block_h = blocks.grid.block_h;
  b.cols = blocks.grid.cols;
  b.rows = blocks.grid.rows;
  b.span_x0 = span.x0;
  b.span_y0 = span.y0;
  b.across = span.x1 - span.x0;
  b.count = span.count();
  b.batch = batch;
  b.image_w = blocks.image_w;
  b.image_h = blocks.image_h;
  b.plane_x = blocks.plane.x;
  b.plane_y = blocks.plane.y;
  b.computed_x = blocks.computed.x;
  b.computed_y = blocks.computed.y;
  b.halo_left = kernel.anchor_x;
  b.halo_top = kernel.anchor_y;
  for (b.first = 0; b.first < span.count(); b.first += batch) {
    fft::gather_blocks(a, b, type, channels, planes, stream);
    check(cufftSetStream(plan.forward, stream), "cufftSetStream");
    check(cufftSetWorkArea(plan.forward, base + layout.work), "cufftSetWorkArea");
    check(cufftExecR2C(plan.forward, planes, reinterpret_cast<cufftComplex*>(bins)), "cufftExecR2C");
    fft::multiply(bins, spectrum->bins.as<float2>(), plane_bins(shape), shape.planes, stream);
    check(cufftSetStream(plan.inverse, stream), "cufftSetStream");
    check(cufftSetWorkArea(plan.inverse, base + layout.work), "cufftSetWorkArea");
    check(cufftExecC2R(plan.inverse, reinterpret_cast<cufftComplex*>(bins), planes), "cufftExecC2R");
    fft::store_blocks(a, b, type, channels, planes, stream);
  }
  return spectrum;
#else
  (void)a;
  (void)blocks;
  (void)type;
  (void)channels;
  (void)kernel;
  (void)lane;
  (void)stream;
  throw Error(ErrorKind::Internal, "built without cuFFT: no GPU FFT path");
#endif
}

}  // namespace tf::cuda
