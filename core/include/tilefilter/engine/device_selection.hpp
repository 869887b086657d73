// Device selection, in one place for every front end (the CLI, the C API, the GUI, Python through the
// C API): GPU discovery (the CUDA backend installs a provider), and what a device spec selects.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tf {

class Device;
using DevicePtr = std::shared_ptr<Device>;

// GPU discovery is provided by the CUDA backend (kernels/); without it there are no GPUs.
struct GpuDiscovery {
  std::vector<DevicePtr> gpus;
  std::string message;  // why there are none, when there are none
};
using GpuProvider = std::function<GpuDiscovery(std::size_t memory_cap)>;
void set_gpu_provider(GpuProvider provider);

// Device selection: "all" (every GPU, else the CPU), "gpu", "cpu" (one worker per core), "cpu:N",
// "0,1" (GPU ordinals), "0,cpu:2". `memory_cap` limits each GPU's usable memory (0 = free memory).
struct DeviceSelection {
  std::vector<DevicePtr> devices;
  std::string note;  // e.g. "no GPU: CUDA reports no device" when "all" fell back to the CPU
};
DeviceSelection select_devices(const std::string& spec, std::size_t memory_cap = 0);
// The same from GPUs discovered before (a process that keeps its devices: the GUI), with no discovery.
DeviceSelection select_devices(const std::string& spec, const GpuDiscovery& discovered);
GpuDiscovery discover_gpus(std::size_t memory_cap = 0);

}  // namespace tf
