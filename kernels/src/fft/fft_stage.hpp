// The GPU's FFT path for large general 2-D kernels (docs/design.md, contract 2, "The FFT path"): the
// stages the CPU runs through FFTW run through cuFFT on a GPU, unless the job is exact. Per tile, on
// the lane's stream: the stage's window region (its output region grown by the kernel, read through
// the stage's border maps as every kernel reads) into float32 planes, one per channel, zero-padded
// to a 2^a·3^b·5^c·7^d transform; a batched real-to-complex transform; the product with the
// kernel's spectrum, conj(FFT(k))/(rows·cols) as on the CPU (so the result is the same
// correlation); the inverse; the valid part quantized and stored like any stage's output. Not bit
// for bit equal to the direct path nor to the CPU's FFT: within the bound of tests/gpu/test_gpu_fft.cpp.
// Without cuFFT at build time (TF_HAVE_CUFFT) every stage convolves directly.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime_api.h>

#include "conv/conv_kernels.hpp"
#include "cuda/cuda_util.hpp"
#include "tilefilter/filters/filter.hpp"

namespace tf::cuda {

// True when this build links cuFFT.
bool fft_built();
// The GPU's own crossover: a stage the CPU takes through FFTW (cpu::stage_uses_fft, from 25x25) goes
// through cuFFT on a GPU from this many taps. Measured on one H200, 8192² RGBA8 from host memory
// (docs/performance.md): direct 8.96 ms at 25x25 against 11.46 through cuFFT, 12.23 at 31x31
// against 11.20, 20.76 at 41x41 against 11.37; the FFT's time hardly moves with the kernel.
constexpr int kGpuFftMinTaps = 31 * 31;
// True when a GPU runs `stage` through cuFFT in a job that is not exact: cuFFT was built, the CPU
// would take its FFT path for it and the kernel has at least kGpuFftMinTaps taps (the choice
// depends on the kernel alone).
bool fft_stage(const Stage& stage);

// The transform of one stage on one tile: rows x cols, each at or past the window region's extent
// (output region + kernel - 1, so no output reads across the wrap-around), `channels` planes batched.
struct FftShape {
  int rows = 0, cols = 0, channels = 0;
  bool operator==(const FftShape&) const = default;
};
FftShape fft_shape(int width, int height, int kw, int kh, int channels);

// Where the lane's FFT buffer holds the planes (rows x cols floats per channel), their spectra
// (rows x (cols/2+1) complex per channel) and cuFFT's work area.
struct FftLayout {
  std::size_t real = 0, bins = 0, work = 0;  // offsets
  std::size_t total = 0;
};
FftLayout fft_layout(const FftShape& shape, std::size_t work_bytes);
// Bytes of one kernel spectrum for a shape (held per device, FftSpectra).
std::size_t fft_spectrum_bytes(const FftShape& shape);
// A planning estimate of a lane's FFT bytes (buffer + one kernel spectrum) for an output region of
// width x height: the work area taken as large as the spectra (cuFFT's is not larger for 2-D R2C).
std::size_t fft_bytes_estimate(int width, int height, int kw, int kh, int channels);

// One lane's cuFFT plans (its stream's), forward and inverse per shape, made without work areas:
// the lane's FFT buffer lends them one at each run. The current device must be the lane's.
class FftPlans {
 public:
  struct Pair {
    FftShape shape;
    int forward = 0, inverse = 0;  // cufftHandle
    std::size_t work = 0;          // the larger work area of the two
  };
  FftPlans() = default;
  ~FftPlans();
  FftPlans(const FftPlans&) = delete;
  FftPlans& operator=(const FftPlans&) = delete;
  const Pair& get(const FftShape& shape);
  // The work area for a stage of `shape`: its own plans' and the one-channel plans that make the kernel's spectrum.
  std::size_t work_bytes(const FftShape& shape);

 private:
  std::vector<std::unique_ptr<Pair>> pairs_;  // most recently used last
};

// One device's kernel spectra, shared by its lanes: made once per kernel and transform size (on the
// asking lane's stream, synchronized before any other lane may read it), kept for the 8 most recent.
class FftSpectra {
 public:
  struct Entry {
    FftShape shape;  // channels = 1
    int kw = 0, kh = 0;
    std::vector<float> taps;
    DeviceBuffer bins;
  };
  // `d_taps`: the kernel's taps on the device (kh rows of kw); `lane_buffer`: the lane's FFT buffer
  // laid out for `shape` (its planes and work area serve as scratch).
  std::shared_ptr<const Entry> get(const Kernel& kernel, const float* d_taps, const FftShape& shape, FftPlans& plans,
                                   void* lane_buffer, int device, cudaStream_t stream);
  std::size_t bytes() const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Entry>> entries_;  // most recently used last
};

// What one lane brings to an FFT stage.
struct FftLane {
  FftPlans* plans = nullptr;
  FftSpectra* spectra = nullptr;
  void* buffer = nullptr;  // at least fft_layout(...).total bytes for every FFT stage of the tile
  int device = 0;
};

// Enqueues one FFT stage on `stream`: `a` as for launch_conv of a General convolution with
// Epilogue::Store (input plane and maps, output region and origin, kernel size and device taps).
// Returns the kernel spectrum it reads: the caller holds it until the stream has run past the stage
// (the cache may drop it meanwhile; it must not be freed under a running kernel).
std::shared_ptr<const FftSpectra::Entry> run_fft_stage(const ConvArgs& a, SampleType type, int channels,
                                                       const Kernel& kernel, const FftLane& lane, cudaStream_t stream);

}  // namespace tf::cuda
