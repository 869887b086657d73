// nvJPEG's handles of one GPU, shared by its lanes (nvjpeg_handles.hpp).
#include "nvjpeg_handles.hpp"

#include <map>

#include <fmt/format.h>

#include "tilefilter/engine/startup.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {

namespace {

const char* status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG: return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "allocator failure";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "implementation not supported";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "incomplete bitstream";
  }
  return "unknown status";
}

// A handle for `backend`, with interpolated chroma upsampling (libjpeg-turbo's "fancy"
// upsampling: the same pixels) when the backend takes the flag; false when the backend is not
// available here.
bool create(nvjpegBackend_t backend, nvjpegHandle_t& handle) {
  handle = nullptr;
  if (nvjpegCreateEx(backend, nullptr, nullptr, NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION, &handle) ==
      NVJPEG_STATUS_SUCCESS)
    return true;
  handle = nullptr;
  if (nvjpegCreateEx(backend, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &handle) == NVJPEG_STATUS_SUCCESS) return true;
  handle = nullptr;
  return false;
}

}  // namespace

void check(nvjpegStatus_t s, const std::string& name, const char* what) {
  if (s != NVJPEG_STATUS_SUCCESS)
    throw Error(ErrorKind::Device, fmt::format("{}: nvJPEG {} failed ({})", name, what, status_name(s)));
}

nvjpegHandle_t GpuHandles::cuda_decoder() {
  std::lock_guard lock(def_mutex);
  if (!def.value) {
    StartupTimer timer(fmt::format("gpu{} nvJPEG CUDA decoder", ordinal));
    if (!create(NVJPEG_BACKEND_DEFAULT, def.value))
      throw Error(ErrorKind::Device, fmt::format("gpu{}: nvJPEG cannot start", ordinal));
  }
  return def.value;
}

std::shared_ptr<GpuHandles> handles_for(int ordinal) {
  static auto* mutex = new std::mutex;
  static auto* made = new std::map<int, std::weak_ptr<GpuHandles>>;
  static auto* making = new std::map<int, std::unique_ptr<std::mutex>>;
  std::mutex* mine = nullptr;
  {
    std::lock_guard lock(*mutex);
    auto& m = (*making)[ordinal];
    if (!m) m = std::make_unique<std::mutex>();
    mine = m.get();
  }
  std::lock_guard one_at_a_time(*mine);  // a GPU's other lanes wait for its handles
  {
    std::lock_guard lock(*mutex);
    if (auto h = (*made)[ordinal].lock()) return h;
  }
  StartupTimer timer(fmt::format("gpu{} nvJPEG handles", ordinal));
  auto h = std::make_shared<GpuHandles>();
  h->ordinal = ordinal;
  // The hardware decoder where this GPU has one (A100, H100, H200, ...); nvJPEG says so at creation.
  if (!create(NVJPEG_BACKEND_HARDWARE, h->hw.value)) {
    h->hw.value = nullptr;
    (void)h->cuda_decoder();  // every file goes through it
  }
  std::lock_guard lock(*mutex);
  (*made)[ordinal] = h;
  return h;
}

}  // namespace tf::cuda
