// GPU discovery for core, the runtime description and the pinned allocator.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "cuda_device.hpp"
#include "nvml.hpp"
#ifdef TF_HAVE_NVJPEG
#include "nvjpeg_lane.hpp"
#endif
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/engine/startup.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {

namespace {

std::atomic<bool> started{false};  // discovery made a GPU device in this process

// Any CUDA error during discovery means "no GPU", with CUDA's reason (CI has no driver at all).
GpuDiscovery discover(std::size_t memory_cap, const std::vector<int>& only) {
  GpuDiscovery found;
  int count = 0;
  // Where the CLI allows it the driver starts only the GPUs named: CUDA's ordinal d is then the d-th of
  // them, shown by its ordinal on the machine.
  const std::vector<int> shown = narrow_visible_gpus(only) ? gpus_made_visible(only) : std::vector<int>{};
  const auto machine_ordinal = [&](int d) { return d < static_cast<int>(shown.size()) ? shown[d] : d; };
  StartupTimer driver("cuda driver (cudaGetDeviceCount)");
  const cudaError_t e = cudaGetDeviceCount(&count);
  driver.done();
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    found.message = fmt::format("CUDA reports: {}", cudaGetErrorString(e));
    return found;
  }
  if (count == 0) {
    found.message = "CUDA reports no device";
    return found;
  }
  found.visible = count;
  // Each GPU comes up on a thread of its own: the driver makes contexts one at a time, but the rest
  // (properties, the kernels' module, NVML's link) overlaps.
  std::vector<DevicePtr> made(count);
  std::vector<std::string> why(count);
  std::vector<std::thread> threads;
  for (int d = 0; d < count; ++d) {
    const int m = machine_ordinal(d);
    if (!only.empty() && std::find(only.begin(), only.end(), m) == only.end()) continue;
    threads.emplace_back([&, d, m] {
      try {
        StartupTimer device(fmt::format("gpu{} device (context, properties, kernels)", m));
        made[d] = make_cuda_device(d, memory_cap, m);
      } catch (const std::exception& ex) {
        why[d] = ex.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  std::string skipped;
  for (int d = 0; d < count; ++d) {
    if (made[d]) found.gpus.push_back(std::move(made[d]));
    else if (!why[d].empty()) skipped += (skipped.empty() ? "" : "; ") + why[d];
  }
  if (found.gpus.empty()) found.message = skipped;
  else started = true;
  return found;
}

std::string version(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

bool any_gpu() {
  static const bool yes = [] {
    int n = 0;
    const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    (void)cudaGetLastError();
    return ok;
  }();
  return yes;
}

// Pointers that cudaHostAlloc returned (the rest came from the fallback). Never destroyed: images
// may be released during static destruction.
std::mutex& pinned_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::unordered_set<void*>& pinned_set() {
  static auto* s = new std::unordered_set<void*>;
  return *s;
}

void* allocate_pinned(std::size_t bytes) {
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) == cudaSuccess) {
    std::lock_guard lock(pinned_mutex());
    pinned_set().insert(p);
    return p;
  }
  (void)cudaGetLastError();
  return default_allocator().allocate(bytes);
}

void release_pinned(void* p) {
  bool pinned = false;
  {
    std::lock_guard lock(pinned_mutex());
    pinned = pinned_set().erase(p) > 0;
  }
  if (pinned) (void)cudaFreeHost(p);
  else default_allocator().release(p);
}

}  // namespace

void install_backend() {
  set_gpu_provider(discover);
#ifdef TF_HAVE_NVJPEG
  set_gpu_jpeg_provider(make_nvjpeg_lane);
#endif
}

bool gpus_started() { return started.load(); }

std::vector<ListedGpu> list_gpus_without_contexts() {
  // NVML numbers the GPUs as CUDA does only where nothing reordered them or narrowed them other than to the
  // first few (a user's CUDA_VISIBLE_DEVICES=0, as this process's own narrowing, keeps their ordinals).
  if (std::getenv("CUDA_DEVICE_ORDER")) return {};
  int first = -1;  // -1: every GPU NVML lists
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && !visible_gpus_narrowed()) {
    first = first_gpus_kept(visible);
    if (first < 0) return {};
  }
  std::vector<ListedGpu> gpus = nvml::list();
  if (first >= 0 && gpus.size() > static_cast<std::size_t>(first)) gpus.resize(static_cast<std::size_t>(first));
  return gpus;
}

std::string runtime_description_without_driver_start() {
  const int driver = nvml::cuda_driver_version();
  if (driver == 0) return runtime_description();
  return fmt::format("CUDA runtime {}, driver {}", version(CUDART_VERSION), version(driver));
}

std::string runtime_description() {
  int runtime = 0, driver = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  const cudaError_t e = cudaDriverGetVersion(&driver);
  (void)cudaGetLastError();
  if (e != cudaSuccess || driver == 0) return fmt::format("CUDA runtime {}, no driver", version(runtime));
  return fmt::format("CUDA runtime {}, driver {}", version(runtime), version(driver));
}

const PixelAllocator* pinned_allocator() {
  // Asked before any CUDA call (a batch's options): where the driver shows no GPU, there is none;
  // otherwise CUDA is asked at the first allocation, which falls back to ordinary memory.
  if (gpus_visible_without_cuda() == 0 && !any_gpu()) return nullptr;
  static const PixelAllocator allocator{allocate_pinned, release_pinned};
  return &allocator;
}

}  // namespace tf::cuda
