// Built when no CUDA compiler is found: there are no GPUs, and core says why.
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/device.hpp"

namespace tf::cuda {
void install_backend() {
  set_gpu_provider([](std::size_t) { return GpuDiscovery{{}, "built without CUDA"}; });
}
std::string runtime_description() { return "built without CUDA"; }
const PixelAllocator* pinned_allocator() { return nullptr; }
}  // namespace tf::cuda
