// Probe, not a test: what nvJPEG's start-up costs on every GPU, and whether GPUs can start it at
// the same time. For each GPU: a context (cudaFree(0)), a hardware-backend handle (nvjpegCreateExV2
// with allocators that count the bytes and seconds they spend), a decoder state and stream parser,
// the batched decode's buffers (nvjpegDecodeBatchedPreAllocate for 32 photos 4000x3000 4:2:0), and an
// encoder state. Three ways:
//   serial     one thread, one GPU after another
//   threads    a thread a GPU, all at once (what `tilefilter batch` does)
//   processes  a process a GPU, forked before any CUDA call
// Each step prints as one JSON line with start and end seconds since the probe began (a monotonic
// clock the processes share).
//
//   tf_nvjpeg_startup serial|threads|processes [GPU_COUNT]
#include <cuda_runtime.h>
#include <nvjpeg.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
Clock::time_point g_t0;

double since_start() { return std::chrono::duration<double>(Clock::now() - g_t0).count(); }

struct Counted {
  std::atomic<std::size_t> bytes{0};
  std::atomic<long> calls{0};
  std::atomic<long> micros{0};
};
Counted g_pinned, g_device;

template <class F> int counted(Counted& c, std::size_t size, F&& f) {
  const auto t = Clock::now();
  const int rc = f();
  c.micros += std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
  c.bytes += size;
  ++c.calls;
  return rc;
}

int dev_malloc(void*, void** p, std::size_t n, cudaStream_t) {
  return counted(g_device, n, [&] { return static_cast<int>(cudaMalloc(p, n)); });
}
int dev_free(void*, void* p, std::size_t, cudaStream_t) { return static_cast<int>(cudaFree(p)); }
int pinned_malloc(void*, void** p, std::size_t n, cudaStream_t) {
  return counted(g_pinned, n, [&] { return static_cast<int>(cudaHostAlloc(p, n, cudaHostAllocDefault)); });
}
int pinned_free(void*, void* p, std::size_t, cudaStream_t) { return static_cast<int>(cudaFreeHost(p)); }

std::string g_mode;

template <class F> void step(int gpu, const char* what, F&& f) {
  const double a = since_start();
  const int rc = f();
  const double b = since_start();
  std::printf("{\"mode\":\"%s\",\"pid\":%d,\"gpu\":%d,\"step\":\"%s\",\"start_s\":%.4f,\"end_s\":%.4f,\"rc\":%d}\n",
              g_mode.c_str(), static_cast<int>(getpid()), gpu, what, a, b, rc);
  std::fflush(stdout);
}

void start_gpu(int gpu) {
  step(gpu, "context", [&] {
    cudaSetDevice(gpu);
    return static_cast<int>(cudaFree(nullptr));
  });
  nvjpegDevAllocatorV2_t dev{dev_malloc, dev_free, nullptr};
  nvjpegPinnedAllocatorV2_t pin{pinned_malloc, pinned_free, nullptr};
  nvjpegHandle_t hw = nullptr;
  step(gpu, "hardware handle", [&] {
    return static_cast<int>(
        nvjpegCreateExV2(NVJPEG_BACKEND_HARDWARE, &dev, &pin, NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION, &hw));
  });
  if (!hw) return;
  nvjpegJpegState_t state = nullptr;
  nvjpegJpegStream_t parsed = nullptr;
  step(gpu, "decoder state", [&] { return static_cast<int>(nvjpegJpegStateCreate(hw, &state)); });
  step(gpu, "stream parser", [&] { return static_cast<int>(nvjpegJpegStreamCreate(hw, &parsed)); });
  step(gpu, "batched buffers (32 x 12 MP 4:2:0)", [&] {
    return static_cast<int>(
        nvjpegDecodeBatchedPreAllocate(hw, state, 32, 4000, 3000, NVJPEG_CSS_420, NVJPEG_OUTPUT_RGBI));
  });
  nvjpegEncoderState_t enc = nullptr;
  nvjpegEncoderParams_t params = nullptr;
  step(gpu, "encoder state", [&] {
    const int a = static_cast<int>(nvjpegEncoderStateCreate(hw, &enc, nullptr));
    const int b = static_cast<int>(nvjpegEncoderParamsCreate(hw, &params, nullptr));
    return a ? a : b;
  });
  nvjpegHandle_t cuda_backend = nullptr;
  step(gpu, "CUDA-backend handle",
       [&] { return static_cast<int>(nvjpegCreateExV2(NVJPEG_BACKEND_DEFAULT, &dev, &pin, 0, &cuda_backend)); });
  std::printf(
      "{\"mode\":\"%s\",\"pid\":%d,\"gpu\":%d,\"allocations\":{\"pinned_mib\":%.1f,\"pinned_calls\":%ld,\"pinned_s\":%.4f,"
      "\"device_mib\":%.1f,\"device_calls\":%ld,\"device_s\":%.4f}}\n",
      g_mode.c_str(), static_cast<int>(getpid()), gpu, g_pinned.bytes / 1048576.0, g_pinned.calls.load(),
      g_pinned.micros * 1e-6, g_device.bytes / 1048576.0, g_device.calls.load(), g_device.micros * 1e-6);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  g_t0 = Clock::now();
  if (argc < 2) {
    std::fprintf(stderr, "usage: tf_nvjpeg_startup serial|threads|processes [GPU_COUNT]\n");
    return 2;
  }
  g_mode = argv[1];
  int gpus = argc > 2 ? std::atoi(argv[2]) : 0;
  if (gpus <= 0 && g_mode != "processes") {
    step(-1, "driver (cudaGetDeviceCount)", [&] { return static_cast<int>(cudaGetDeviceCount(&gpus)); });
  }
  if (gpus <= 0) {
    std::fprintf(stderr, "tf_nvjpeg_startup: give GPU_COUNT for processes, or no GPU is visible\n");
    return 2;
  }
  if (g_mode == "serial") {
    for (int g = 0; g < gpus; ++g) start_gpu(g);
  } else if (g_mode == "threads") {
    std::vector<std::thread> pool;
    for (int g = 0; g < gpus; ++g) pool.emplace_back(start_gpu, g);
    for (auto& t : pool) t.join();
  } else if (g_mode == "processes") {
    std::vector<pid_t> children;
    for (int g = 0; g < gpus; ++g) {
      const pid_t pid = fork();
      if (pid == 0) {
        start_gpu(g);
        std::_Exit(0);
      }
      children.push_back(pid);
    }
    for (pid_t pid : children) waitpid(pid, nullptr, 0);
  } else {
    std::fprintf(stderr, "tf_nvjpeg_startup: unknown mode '%s'\n", argv[1]);
    return 2;
  }
  std::printf("{\"mode\":\"%s\",\"done_s\":%.4f}\n", g_mode.c_str(), since_start());
  return 0;
}
