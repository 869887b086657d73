// The GPU JPEG codec on nvJPEG (tilefilter/gpu_jpeg.hpp); built only when CMake finds nvJPEG.
#pragma once
#include <memory>
#include <string>

#include "tilefilter/engine/device.hpp"
#include "tilefilter/io/gpu_jpeg.hpp"

namespace tf::cuda {

// A lane on `device` (a CUDA device), or null with `why` when nvJPEG cannot start there.
std::unique_ptr<GpuJpegLane> make_nvjpeg_lane(const Device& device, std::string* why);

}  // namespace tf::cuda
