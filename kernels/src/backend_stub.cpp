// Built when no CUDA compiler is found: there are no GPUs, and core says why.
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/engine/device.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {
void install_backend() {
  set_gpu_provider([](std::size_t, const std::vector<int>&) { return GpuDiscovery{{}, "built without CUDA"}; });
}
std::vector<ListedGpu> list_gpus_without_contexts() { return {}; }
bool gpus_started() { return false; }
StartupFloor measure_startup_floor(bool) {
  StartupFloor f;
  f.note = "built without CUDA";
  return f;
}
std::string runtime_description() { return "built without CUDA"; }
std::string runtime_description_without_driver_start() { return "built without CUDA"; }
const PixelAllocator* pinned_allocator() { return nullptr; }
std::size_t reserved_bytes(const Device&) { return 0; }
ResidentTiming bench_device_resident(const ImageView&, const Chain&, const Border&, const std::vector<int>&, int,
                                     const ImageView*) {
  throw Error(ErrorKind::Device, "device-resident benchmark: built without CUDA");
}
PcieBandwidth measure_pcie(const std::vector<int>&, std::size_t) {
  throw Error(ErrorKind::Device, "PCIe measurement: built without CUDA");
}
StagingRate measure_host_staging(std::size_t) {
  throw Error(ErrorKind::Device, "pinned staging measurement: built without CUDA");
}
}  // namespace tf::cuda
