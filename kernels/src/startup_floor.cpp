// The least a process pays before its GPUs can work, with the CUDA runtime alone (no TileFilter
// code in the way): the driver's start, one context a GPU, a pinned buffer. `tilefilter startup`
// measures it in a fresh process, beside its own start-up.
#include <chrono>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "tilefilter/cuda_backend.hpp"

namespace tf::cuda {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

StartupFloor measure_startup_floor(bool contexts_at_once) {
  StartupFloor f;
  auto t = std::chrono::steady_clock::now();
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  f.driver_s = seconds_since(t);
  if (e != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    f.note = e != cudaSuccess ? fmt::format("CUDA reports: {}", cudaGetErrorString(e)) : "CUDA reports no device";
    return f;
  }
  f.gpus = count;
  f.context_s.assign(count, 0);
  t = std::chrono::steady_clock::now();
  auto make_context = [&f](int d) {
    const auto t0 = std::chrono::steady_clock::now();
    if (cudaSetDevice(d) == cudaSuccess && cudaFree(nullptr) == cudaSuccess) f.context_s[d] = seconds_since(t0);
    else (void)cudaGetLastError();
  };
  if (contexts_at_once) {
    std::vector<std::thread> threads;
    for (int d = 0; d < count; ++d) threads.emplace_back(make_context, d);
    for (auto& th : threads) th.join();
  } else {
    for (int d = 0; d < count; ++d) make_context(d);
  }
  f.contexts_s = seconds_since(t);
  t = std::chrono::steady_clock::now();
  void* p = nullptr;
  if (cudaSetDevice(0) == cudaSuccess && cudaHostAlloc(&p, 256u << 20, cudaHostAllocPortable) == cudaSuccess) {
    f.pinned_256mib_s = seconds_since(t);
    (void)cudaFreeHost(p);
  } else {
    (void)cudaGetLastError();
  }
  return f;
}

}  // namespace tf::cuda
