// Runs a planned tile's chain on one stream: every stage reads the previous one's buffer through its
// border maps and writes its computed region; intermediates stay on the device (docs/design.md, contract 3: one
// upload per tile for a whole chain). Shared by the CUDA Device (host-resident images) and the
// device-resident benchmark.
#pragma once
#include <cstddef>
#include <vector>

#include "conv/launch_shape.hpp"
#include "cuda/cuda_util.hpp"
#include "tile_plan.hpp"
#include "tilefilter/border.hpp"
#include "tilefilter/image.hpp"

namespace tf::cuda {

// A chain's taps on one device, uploaded once per job.
class DeviceTaps {
 public:
  // Synchronous upload; the current device must be `device`.
  void upload(const Chain& chain, int device);
  const float* at(std::size_t stage, std::size_t conv) const { return buffer_.as<float>() + offsets_[stage][conv]; }
  std::size_t bytes() const { return buffer_.capacity(); }

 private:
  DeviceBuffer buffer_;
  std::vector<std::vector<std::size_t>> offsets_;
};

// A buffer region on the device.
struct DeviceRegion {
  void* data = nullptr;
  std::size_t pitch = 0;
};

// Row pitch of a buffer holding `width` pixels (aligned for vector access).
std::size_t device_pitch(int width, std::size_t pixel_bytes);

// Device memory one lane needs for a plan (upload, two stage buffers, the scratch of two-convolution
// stages, the wide separable path's intermediate, maps).
struct LaneNeeds {
  std::size_t upload = 0, stage = 0, scratch = 0, inter = 0, maps = 0;
  std::size_t total() const { return upload + 2 * stage + scratch + inter + maps; }
};
LaneNeeds lane_needs(const Chain& chain, const TilePlan& plan, const Format& format);

// One lane's device buffers, grown on demand and reused for every tile.
struct LaneBuffers {
  DeviceBuffer upload, stage[2], scratch, inter, maps;
  // Grows the buffers for `needs`; returns the bytes newly allocated.
  std::size_t reserve(const LaneNeeds& needs, int device);
  std::size_t bytes() const {
    return upload.capacity() + stage[0].capacity() + stage[1].capacity() + scratch.capacity() + inter.capacity() +
           maps.capacity();
  }
};

// Launches every stage of `plan` on `stream`. `input` holds the uploaded pixels (plan.columns x
// plan.rows, compact), buffers.maps the plan's maps. Returns the region holding tile.out. Each
// convolution's launch shape is chosen for `multiprocessors`; `launched`, when given, receives them
// in launch order.
DeviceRegion run_chain(const Chain& chain, const TilePlan& plan, const DeviceTaps& taps, LaneBuffers& buffers,
                       DeviceRegion input, const Format& format, const Border& border, int multiprocessors,
                       cudaStream_t stream, std::vector<LaunchShape>* launched = nullptr);

}  // namespace tf::cuda
