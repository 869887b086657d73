// nvJPEG's handles, shared by the lanes of one GPU (nvjpeg_lane.cpp), and what every nvJPEG call
// site needs: RAII owners of its objects and its statuses as tf::Error.
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include <nvjpeg.h>

namespace tf::cuda {

// The decoders' output for a file of `channels` (1 or 3): gray, or interleaved RGB.
inline nvjpegOutputFormat_t decoded_format(int channels) {
  return channels == 3 ? NVJPEG_OUTPUT_RGBI : NVJPEG_OUTPUT_Y;
}

// Throws tf::Error (Device) "NAME: nvJPEG WHAT failed (STATUS)".
void check(nvjpegStatus_t s, const std::string& name, const char* what);

// Owners of nvJPEG objects (destroyed in reverse order of the members below).
template <class T, nvjpegStatus_t (*Destroy)(T)> struct Owned {
  T value = nullptr;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (value) (void)Destroy(value);
  }
};

// nvJPEG's handles of one GPU, shared by its lanes (the lanes' states stay their own): on an H100 a
// lane that made its own took about 1.8 s, one lane after another. Made by the first lane of the
// GPU, freed with its last. Each handle and the first state made from it cost 0.28-0.37 s on an H100
// (2026-11-26), and nvJPEG makes them one at a time in a process, whichever GPU asks: where the GPU
// has a hardware decoder, its handle decodes and encodes, and the CUDA decoder's handle is made only
// for a file the hardware does not take.
struct GpuHandles {
  Owned<nvjpegHandle_t, nvjpegDestroy> hw, def;
  std::mutex def_mutex;
  int ordinal = 0;

  // The CUDA decoder's handle, made on first use.
  nvjpegHandle_t cuda_decoder();
};

// The handles of GPU `ordinal`: made by the first caller (the others wait), freed with the last holder.
std::shared_ptr<GpuHandles> handles_for(int ordinal);

}  // namespace tf::cuda
