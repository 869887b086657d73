// Runs a planned tile's chain on one stream: every stage reads the previous one's buffer through its
// border maps and writes its computed region; intermediates stay on the device (docs/design.md, contract 3: one
// upload per tile for a whole chain). Shared by the CUDA Device (host-resident images) and the
// device-resident benchmark.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "conv/launch_shape.hpp"
#include "cuda/cuda_util.hpp"
#include "fft/fft_stage.hpp"
#include "tile_plan.hpp"
#include "tilefilter/image/border.hpp"
#include "tilefilter/image/image.hpp"

namespace tf::cuda {

// A chain's taps on one device, uploaded once per job.
class DeviceTaps {
 public:
  // Copies the taps on `stream` and waits until they are on the device; the current device must be
  // `device`. (A plain cudaMemcpy from pageable memory may return before its DMA has landed, and
  // it runs on the legacy stream, which the lanes' non-blocking streams do not wait for: a lane's
  // first kernels could read the taps before they arrive.)
  void upload(const Chain& chain, int device, cudaStream_t stream);
  const float* at(std::size_t stage, std::size_t conv) const { return buffer_.as<float>() + offsets_[stage][conv]; }
  std::size_t bytes() const { return buffer_.capacity(); }

 private:
  DeviceBuffer buffer_;
  std::vector<std::vector<std::size_t>> offsets_;
  std::vector<float> uploaded_;  // what buffer_ holds
  int device_ = -1;
};

// A buffer region on the device.
struct DeviceRegion {
  void* data = nullptr;
  std::size_t pitch = 0;
};

// Row pitch of a buffer holding `width` pixels (aligned for vector access).
std::size_t device_pitch(int width, std::size_t pixel_bytes);

// Device memory one lane needs for a plan (upload, two stage buffers, the scratch of two-convolution
// stages, the wide separable path's intermediate, maps; for FFT stages the planes, spectra and
// cuFFT work area, and the kernel's spectrum, which the device holds for all its lanes).
struct LaneNeeds {
  std::size_t upload = 0, stage = 0, scratch = 0, inter = 0, maps = 0, fft = 0, spectrum = 0;
  std::size_t total() const { return upload + 2 * stage + scratch + inter + maps + fft + spectrum; }
};
// `fft`: the lane's cuFFT plans when the job may take the FFT path (not exact), else null (every
// stage direct). Makes the plans it sizes for the plan's FFT stages (StagePlan::on_blocks).
LaneNeeds lane_needs(const Chain& chain, const TilePlan& plan, const Format& format, FftPlans* fft = nullptr);

// One lane's device buffers, grown on demand and reused for every tile.
struct LaneBuffers {
  DeviceBuffer upload, stage[2], scratch, inter, maps, fft;
  // The kernel spectra the last tile's FFT stages read, held until its stream has run past them.
  std::vector<std::shared_ptr<const FftSpectra::Entry>> spectra_in_use;
  // Grows the buffers for `needs`; returns the bytes newly allocated.
  std::size_t reserve(const LaneNeeds& needs, int device);
  std::size_t bytes() const {
    return upload.capacity() + stage[0].capacity() + stage[1].capacity() + scratch.capacity() + inter.capacity() +
           maps.capacity() + fft.capacity();
  }
};

// What the kernels need of a buffer they read or write in place of a lane's own (a caller's image):
// its start and row pitch aligned to read_alignment() (one vector load a pixel for four channels, a
// sample otherwise), or for the last stage's output to write_alignment() (four-channel runs of 8
// pixels are stored 16 bytes at a time, conv/pixel_io.cuh emit_run).
std::size_t read_alignment(const Format& format);
std::size_t write_alignment(const Format& format);
bool is_aligned(const void* data, std::size_t pitch, std::size_t alignment);

// True when every launch of run_chain that writes the last stage's output reads only lane buffers,
// never `input`: so the output may be the input itself (an image filtered in place). That holds when
// a stage buffer lies between the first read and the last write (two stages or more), or when the
// single stage's last convolution runs as two launches through an intermediate (the wide separable
// path, box sums). Direct convolution only (no FFT stage).
bool output_may_alias_input(const Chain& chain, const TilePlan& plan, const Format& format, int multiprocessors);

// The chain's plan for a whole w x h image as one tile, for run_chain straight on a decoded image
// (the GPU JPEG codec's path). Throws tf::Error (InvalidArgument) naming `name` where the chain cannot
// run so: filter by filter at this border, through the FFT, or a wrap border reading the image in
// pieces (the file then goes through the tiled Device path).
TilePlan whole_image_plan(const Chain& chain, const Border& border, int w, int h, const std::string& name);

// Launches every stage of `plan` on `stream`. `input` holds the uploaded pixels (plan.columns x
// plan.rows, compact), buffers.maps the plan's maps. Returns the region holding tile.out. Each
// convolution's launch shape is chosen for `multiprocessors`; `launched`, when given, receives them
// in launch order. `fft` (plans and spectra; null for exact jobs) sends the stages the plan put on
// their FFT grid (StagePlan::on_blocks) through cuFFT, using buffers.fft sized by lane_needs with the
// same plans. The previous tile on this stream must be finished (its spectra are released here).
// `into`, when given, receives the last stage's output (tile.out, at its pitch, aligned to
// write_alignment) in place of a stage buffer: a device-resident image is written where it lives,
// without a copy. `input` may be a caller's image too (aligned to read_alignment); `into` may overlap
// it only where output_may_alias_input().
DeviceRegion run_chain(const Chain& chain, const TilePlan& plan, const DeviceTaps& taps, LaneBuffers& buffers,
                       DeviceRegion input, const Format& format, const Border& border, int multiprocessors,
                       cudaStream_t stream, const FftLane* fft = nullptr, std::vector<LaunchShape>* launched = nullptr,
                       DeviceRegion into = {});

}  // namespace tf::cuda
