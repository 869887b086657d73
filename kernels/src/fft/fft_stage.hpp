// The GPU's FFT path for large general 2-D kernels (docs/design.md, contract 2, "The FFT path"): the
// stages the CPU runs through FFTW run through cuFFT on a GPU, unless the job is exact. Per tile, on
// the lane's stream, block by block over the stage's fixed grid (fft_blocks.hpp, the CPU's grid):
// each block meeting the stage's output, grown by the kernel's halo and read through the stage's
// border maps as every kernel reads, into float32 planes (one per channel, zeros past the block's
// input), a fixed number of blocks per batched real-to-complex transform (so every block goes
// through the same plan whatever the tile); the product with the kernel's spectrum,
// conj(FFT(k))/(rows·cols) as on the CPU (so the result is the same correlation); the inverse; each
// block's part of the output quantized and stored like any stage's output. The same bits whatever
// the tiles and the GPUs; not bit for bit equal to the direct path nor to the CPU's FFT: within the
// bound of tests/gpu/test_gpu_fft.cpp. Without cuFFT at build time (TF_HAVE_CUFFT) every stage
// convolves directly.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime_api.h>

#include "conv/conv_kernels.hpp"
#include "cuda/cuda_util.hpp"
#include "tilefilter/engine/fft_blocks.hpp"
#include "tilefilter/filters/filter.hpp"

namespace tf::cuda {

// True when this build links cuFFT.
bool fft_built();
// The GPU's own crossover: a stage the CPU takes through FFTW (stage_uses_fft, from 25x25) goes
// through cuFFT on a GPU from this many taps. Measured on one H200, 8192² RGBA8 from host memory
// (docs/performance.md): direct 8.96 ms at 25x25 against 11.46 through cuFFT, 12.23 at 31x31
// against 11.20, 20.76 at 41x41 against 11.37; the FFT's time hardly moves with the kernel.
constexpr int kGpuFftMinTaps = 31 * 31;
// True when a GPU runs `stage` through cuFFT in a job that is not exact: cuFFT was built, the CPU
// would take its FFT path for it and the kernel has at least kGpuFftMinTaps taps (the choice
// depends on the kernel alone).
bool fft_stage(const Stage& stage);

// One batched transform: `planes` planes of rows x cols, one after another.
struct FftShape {
  int rows = 0, cols = 0, planes = 0;
  bool operator==(const FftShape&) const = default;
};
// Blocks of a grid one batched transform takes: about 16 MiB of planes and spectra, from the
// transform's size and the channels alone (never from a tile), at least 1, at most 64.
int fft_batch_blocks(const FftBlocks& grid, int channels);
// The batched transform of an FFT stage: grid.rows x grid.cols, fft_batch_blocks x channels planes.
FftShape fft_shape(const FftBlocks& grid, int channels);

// Where the lane's FFT buffer holds the planes (rows x cols floats each), their spectra
// (rows x (cols/2+1) complex each) and cuFFT's work area.
struct FftLayout {
  std::size_t real = 0, bins = 0, work = 0;  // offsets
  std::size_t total = 0;
};
FftLayout fft_layout(const FftShape& shape, std::size_t work_bytes);
// Bytes of one kernel spectrum for a shape (held per device, FftSpectra).
std::size_t fft_spectrum_bytes(const FftShape& shape);
// A planning estimate of a lane's FFT bytes (buffer + one kernel spectrum) for a kernel over an image
// of image_w x image_h: the work area taken as large as the spectra (cuFFT's is not larger for 2-D
// R2C). Whatever the tile: the batches are the grid's.
std::size_t fft_bytes_estimate(const Kernel& kernel, int image_w, int image_h, int channels);

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
  // The work area for a stage of `shape`: its own plans' and the one-plane plans that make the kernel's spectrum.
  std::size_t work_bytes(const FftShape& shape);

 private:
  std::vector<std::unique_ptr<Pair>> pairs_;  // most recently used last
};

// One device's kernel spectra, shared by its lanes: made once per kernel and transform size (on the
// asking lane's stream, synchronized before any other lane may read it), kept for the 8 most recent.
class FftSpectra {
 public:
  struct Entry {
    FftShape shape;  // planes = 1
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

// Where an FFT stage's blocks lie: its grid, its input plane and its computed output region (image
// coordinates; the plane covers every block meeting `computed` grown by the kernel's halo).
struct FftBlockArgs {
  FftBlocks grid;
  Rect plane, computed;
  int image_w = 0, image_h = 0;
};

// Enqueues one FFT stage on `stream`: `a` as for launch_conv of a General convolution with
// Epilogue::Store (input plane and maps, output region, kernel size and device taps), `blocks` where
// its blocks lie. Returns the kernel spectrum it reads: the caller holds it until the stream has run
// past the stage (the cache may drop it meanwhile; it must not be freed under a running kernel).
std::shared_ptr<const FftSpectra::Entry> run_fft_stage(const ConvArgs& a, const FftBlockArgs& blocks, SampleType type,
                                                       int channels, const Kernel& kernel, const FftLane& lane,
                                                       cudaStream_t stream);

}  // namespace tf::cuda
