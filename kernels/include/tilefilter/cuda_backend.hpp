// The CUDA backend's entry points. Everything CUDA stays behind this header: callers see core's
// Device interface only.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "tilefilter/engine/device.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/image/border.hpp"
#include "tilefilter/image/image.hpp"

namespace tf::cuda {

// Installs GPU discovery into core (tf::select_devices, tf::discover_gpus). Safe to call more than
// once; without CUDA in the build, discovery reports that there is no GPU backend.
void install_backend();

// The GPUs as NVML lists them, with a sample each, made without a CUDA call (no driver start-up, no
// context: `tilefilter devices`). Empty without NVML, and where CUDA_DEVICE_ORDER or a CUDA_VISIBLE_DEVICES
// other than the first GPUs in order ("0", "0,1", ...) make CUDA's numbering differ from NVML's. The
// multiprocessor count stays 0.
struct ListedGpu {
  DeviceInfo info;
  DeviceSample sample;
};
std::vector<ListedGpu> list_gpus_without_contexts();

// The least a process pays before its GPUs can work, with the CUDA runtime alone: the driver's
// start (the first CUDA call), a context on each GPU (one after another, or from a thread each),
// a 256 MiB pinned buffer. Meaningful only as a fresh process's first CUDA calls.
struct StartupFloor {
  int gpus = 0;
  double driver_s = 0;
  std::vector<double> context_s;  // each GPU's
  double contexts_s = 0;          // all of them
  double pinned_256mib_s = 0;
  std::string note;  // why there are no GPUs
};
StartupFloor measure_startup_floor(bool contexts_at_once);

// Whether this process discovered a GPU (and so holds contexts, perhaps codec lanes still coming up).
bool gpus_started();

// "CUDA 13.0, driver 13.0" or why CUDA is unavailable.
std::string runtime_description();
// The same from the build's runtime version and NVML's driver version, without starting the driver
// (the driver's version query costs its start-up, 0.5 s on an H100 machine); CUDA's own answer
// where NVML is missing.
std::string runtime_description_without_driver_start();

// Page-locked host memory for images that will be uploaded (pageable uploads are ~7x slower), or
// nullptr when there is no GPU. Falls back to ordinary memory when pinning fails.
const PixelAllocator* pinned_allocator();

// Device memory a CUDA device's buffers hold now (0 for other devices): tests check the
// --device-memory cap with it.
std::size_t reserved_bytes(const Device& device);

// The roofline of a device-resident run: the least a chain asks per pixel, the ceilings of the GPUs
// that ran it, the rate each ceiling allows, and the share of the nearer (lower) one reached.
struct Roofline {
  double bytes_per_pixel = 0;  // each stage reads its input and writes its output once, pixel type
  double fmas_per_pixel = 0;   // FP32 FMAs: taps x channels (box sums on integers: none)
  double copy_gbs = 0;         // device-to-device copy, bytes read + written a second, all GPUs together
  double fmas_per_s = 0;       // FP32 FMA rate, all GPUs together: multiprocessors x FP32 lanes x clock
  double memory_gpix = 0;      // copy_gbs / bytes_per_pixel, Gpix/s
  double fma_gpix = 0;         // fmas_per_s / fmas_per_pixel, Gpix/s (0 = no FMAs: no FMA ceiling)
  std::string bound;           // "memory" or "FMA": the ceiling the run meets first
  double share = 0;            // the run's Gpix/s over that ceiling's
};
Roofline make_roofline(const Chain& chain, const Format& format, double copy_gbs, double fmas_per_s,
                       double gigapixels_per_s);
// FP32 lanes of one multiprocessor of compute capability major.minor (64 on sm_60, sm_7x and sm_80;
// 128 on the others since sm_61, Hopper's sm_90 included).
int fp32_lanes_per_multiprocessor(int major, int minor);

// Device-resident throughput (`tilefilter bench`): the image is uploaded once to each GPU (split
// into horizontal bands, one per GPU, each with its halo), then the chain's kernels run `repeats`
// times after two warm-up runs, timed with CUDA events; no transfer is timed. With several GPUs a
// repeat's time is the slowest GPU's. `output`, when given, receives the result (for checks).
struct ResidentTiming {
  std::vector<std::string> devices;  // "gpu0 (NVIDIA H200)"
  std::vector<double> seconds;       // each repeat
  double median_s = 0, min_s = 0, max_s = 0;
  double gigapixels_per_s = 0;  // image pixels / median
  // Every kernel launch of one repeat, each GPU's in order: "gpu0: separable 9x9 u8x4 8192x4096:
  // grid 256x33x1 block 128, ..." (the launch shape: grid, block, shared memory, work per block).
  std::vector<std::string> launches;
  // Against the GPUs' ceilings: each GPU's device-to-device copy rate measured once a process (256 MiB,
  // median of 5 after a warm-up, CUDA events) and its FMA rate from its properties.
  Roofline roofline;
};
ResidentTiming bench_device_resident(const ImageView& src, const Chain& chain, const Border& border,
                                     const std::vector<int>& ordinals, int repeats, const ImageView* output = nullptr);

// Pinned host <-> device copy bandwidth in GB/s, all the given GPUs at once (a 2-D tile copy is no
// faster): host-to-device alone, device-to-host alone, and both directions at the same time, as one
// copy each way and as the same bytes in 8 MiB copies queued on one stream a direction (the ceiling
// for tiles of that size: host-resident jobs copy that way, docs/performance.md).
struct PcieBandwidth {
  double h2d = 0, d2h = 0, both = 0, both_8mib = 0;
};
PcieBandwidth measure_pcie(const std::vector<int>& ordinals, std::size_t bytes_per_gpu = 256u << 20);

// The host's own copies of a job from pageable memory, the ceiling of such jobs whatever the GPUs:
// pageable rows into pinned staging and the result back, both at once, on the lanes' staging
// workers; GB/s each way.
struct StagingRate {
  double gbs = 0;
  int threads = 0;
};
StagingRate measure_host_staging(std::size_t bytes = 256u << 20);

}  // namespace tf::cuda
