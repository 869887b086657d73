#include "cuda_util.hpp"

#include <fmt/format.h>

#include "tilefilter/util/error.hpp"

namespace tf::cuda {

void throw_cuda_error(cudaError_t error, const char* expr, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so the device stays usable
  throw Error(ErrorKind::Device, fmt::format("{} at {}:{}: {} ({})", expr, file, line, cudaGetErrorString(error),
                                             cudaGetErrorName(error)));
}

ScopedDevice::ScopedDevice(int device) {
  TF_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) {
    TF_CUDA_CHECK(cudaSetDevice(device));
    restore_ = true;
  }
}

ScopedDevice::~ScopedDevice() {
  if (restore_) (void)cudaSetDevice(previous_);
}

std::size_t DeviceBuffer::reserve(std::size_t bytes, int device) {
  if (bytes <= bytes_ && device == device_) return 0;
  release();
  if (bytes == 0) return 0;
  TF_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  bytes_ = bytes;
  device_ = device;
  return bytes;
}

void DeviceBuffer::release() noexcept {
  if (!ptr_) return;
  int current = -1;
  const bool switch_device = cudaGetDevice(&current) == cudaSuccess && current != device_;
  if (switch_device) (void)cudaSetDevice(device_);
  (void)cudaFree(ptr_);
  if (switch_device) (void)cudaSetDevice(current);
  ptr_ = nullptr;
  bytes_ = 0;
}

void PinnedBuffer::reserve(std::size_t bytes) {
  if (bytes <= bytes_) return;
  release();
  TF_CUDA_CHECK(cudaHostAlloc(&ptr_, bytes, cudaHostAllocPortable));
  bytes_ = bytes;
}

void PinnedBuffer::release() noexcept {
  if (ptr_) (void)cudaFreeHost(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

Stream::Stream(int device) : device_(device) {
  ScopedDevice on(device);
  TF_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  if (!stream_) return;
  int current = -1;
  const bool switch_device = cudaGetDevice(&current) == cudaSuccess && current != device_;
  if (switch_device) (void)cudaSetDevice(device_);
  (void)cudaStreamDestroy(stream_);
  if (switch_device) (void)cudaSetDevice(current);
}

void Stream::drain() noexcept {
  (void)cudaStreamSynchronize(stream_);
  (void)cudaGetLastError();
}

Event::Event(int device, Timing timing) : device_(device) {
  ScopedDevice on(device);
  TF_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing == Timing::Timed ? cudaEventDefault : cudaEventDisableTiming));
}

Event::~Event() {
  if (!event_) return;
  int current = -1;
  const bool switch_device = cudaGetDevice(&current) == cudaSuccess && current != device_;
  if (switch_device) (void)cudaSetDevice(device_);
  (void)cudaEventDestroy(event_);
  if (switch_device) (void)cudaSetDevice(current);
}

float elapsed_ms(const Event& from, const Event& to) {
  float ms = 0;
  TF_CUDA_CHECK(cudaEventElapsedTime(&ms, from.get(), to.get()));
  return ms;
}

}  // namespace tf::cuda
