// CudaDevice (cuda_device_impl.hpp), the job's part: the device's construction and info, its tiles, a job's
// begin, samples and memory budgets; and the entry points. Its lanes' part, process(), is in cuda_lanes.cpp.
#include "cuda_device.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "conv/conv_kernels.hpp"
#include "cuda_device_impl.hpp"
#include "nvml.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/engine/startup.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {

namespace detail {

namespace {

// Room left for the CUDA context, the kernels' own needs and other programs when no cap is given.
constexpr std::size_t kMemoryMargin = 512ULL << 20;

bool is_pinned(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

}  // namespace

CudaDevice::CudaDevice(int ordinal, std::size_t memory_cap, int shown) : ordinal_(ordinal), cap_(memory_cap) {
  ScopedDevice on(ordinal);
  cudaDeviceProp prop{};
  TF_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  std::size_t free = 0, total = 0;
  TF_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  std::string why;
  if (!kernels_run_here(&why)) throw Error(ErrorKind::Device, fmt::format("gpu{} ({}): {}", shown, prop.name, why));
  bus_id_ = pci_bus_id(ordinal);
  info_.id = fmt::format("gpu{}", shown);
  info_.name = prop.name;
  info_.kind = DeviceKind::Cuda;
  info_.ordinal = shown;
  info_.memory_total = total;
  info_.memory_free = free;
  info_.multiprocessors = prop.multiProcessorCount;
  info_.link = nvml::pcie_link(bus_id_);
}

CudaDevice::~CudaDevice() {
  try {
    ScopedDevice on(ordinal_);
    lanes_.clear();
    uploads_.reset();
    downloads_.reset();
    spectra_.clear();
  } catch (...) {
  }
}

TileSize CudaDevice::preferred_tile(const TileJob& job) const {
  const std::size_t per_lane = lane_budget(*job.chain);
  // Our buffers need at most core's tile_working_set (upload + two stage buffers in the pixel type,
  // one float scratch); the maps and slack come out of the 10% kept back.
  const std::size_t budget = per_lane / 10 * 9;
  const Halo halo = chain_halo(*job.chain);
  if (!job.exact && std::any_of(job.chain->begin(), job.chain->end(), fft_stage)) {
    // Square tiles whose cuFFT buffers fit too (an estimate; run_tile checks the plans' own sizes).
    auto fits = [&](int side) {
      std::size_t fft = 0;
      for (const auto& stage : *job.chain)
        if (fft_stage(stage))
          fft = std::max(
              fft, fft_bytes_estimate(stage.convs[0].kernel, job.src.width, job.src.height, job.src.format.channels));
      return tile_working_set({side, side}, job.src.format, halo) + fft <= budget;
    };
    int side = kFftTileSide;
    while (side > 32 && !fits(side)) side -= 32;
    return {side, side};
  }
  // PCIe-bound chains go in full-width strips: each uploaded row is one contiguous host run
  // (separable 31 taps, 8192² RGBA8 on one H200: 9.76 Gpix/s in strips, 7.71 in 1024² tiles),
  // 256 rows high whatever the halo, whose rows the lanes carry down a band (31 taps from pinned
  // memory on two H200s, 2026-11-26, 8192x256 against the 4096x512 of 16 halos' height: one GPU
  // 11.52-11.54 Gpix/s against 11.36-11.38, two 17.72-18.99 against 17.08-18.11).
  // Compute-bound ones balance better over more, squarer tiles (2-D 31x31 on two H200: 10.34
  // Gpix/s in 1024² tiles, 9.31 in strips); one H200 computes about 8 Gpix/s at 400 FMAs a pixel.
  // Wide kernels' tiles grow with the halo (kHaloTileFactor).
  if (chain_fmas_per_pixel(*job.chain) > kComputeBoundFmas)
    return halo_tile_for_budget(job.src.width, job.src.height, budget, job.src.format, halo, kSquareTileSide,
                                kHaloTileFactor);
  return strip_tile_for_budget(job.src.width, budget, job.src.format, halo, kStripTilePixels, lanes_share_rows());
}

void CudaDevice::begin(const TileJob& job) {
  if (!job_mutex_.try_lock_for(std::chrono::seconds(60)))
    throw Error(ErrorKind::Device, fmt::format("{}: busy with another job for 60 s", info_.id));
  try {
    ScopedDevice on(ordinal_);
    while (static_cast<int>(lanes_.size()) < lanes()) lanes_.push_back(std::make_unique<Lane>(ordinal_));
    if (!uploads_) uploads_ = std::make_unique<CopyStream>(ordinal_);
    if (!downloads_) downloads_ = std::make_unique<CopyStream>(ordinal_);
    for (auto& lane : lanes_) {
      lane->resident.reset();  // another job's rows
      lane->readers.clear();   // copies of another job's, done when its lanes ended
    }
    last_upload_.reset();
    const std::size_t before = taps_.bytes();
    taps_.upload(*job.chain, ordinal_, uploads_->stream.get());
    reserved_ += static_cast<long long>(taps_.bytes()) - static_cast<long long>(before);
    src_pinned_ = is_pinned(job.src.data);
    dst_pinned_ = is_pinned(job.dst.data);
  } catch (...) {
    job_mutex_.unlock();
    throw;
  }
}

std::optional<DeviceSample> CudaDevice::sample() const {
  if (auto s = nvml::sample(bus_id_)) return s;
  try {
    ScopedDevice on(ordinal_);
    std::size_t free = 0, total = 0;
    TF_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    DeviceSample s;
    s.memory_total = total;
    s.memory_used = total - free;
    return s;
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Memory this device may use: the cap, or the free memory plus what it already holds, less a margin.
std::size_t CudaDevice::budget() const {
  ScopedDevice on(ordinal_);
  std::size_t free = 0, total = 0;
  TF_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  std::size_t usable = free + reserved();
  usable = usable > 2 * kMemoryMargin ? usable - kMemoryMargin : usable / 2;
  return cap_ ? std::min(cap_, usable) : usable;
}

std::size_t CudaDevice::lane_budget(const Chain& chain) const {
  std::size_t taps = 0;
  for (const auto& s : chain)
    for (const auto& c : s.convs) taps += (c.kernel.taps.size() + c.row.size() + c.col.size()) * sizeof(float);
  const std::size_t b = budget();
  return (b > taps ? b - taps : 0) / static_cast<std::size_t>(lanes());
}

bool CudaDevice::kernels_run_here(std::string* why) { return kernels_supported(why); }

}  // namespace detail

using detail::CudaDevice;

DevicePtr make_cuda_device(int ordinal, std::size_t memory_cap, int shown) {
  return std::make_shared<CudaDevice>(ordinal, memory_cap, shown < 0 ? ordinal : shown);
}

int cuda_ordinal(const Device& device) {
  const auto* d = dynamic_cast<const CudaDevice*>(&device);
  return d ? d->cuda_ordinal() : -1;
}

std::string pci_bus_id(int ordinal) {
  char id[32] = {};
  if (cudaDeviceGetPCIBusId(id, sizeof id, ordinal) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  return id;
}

std::size_t reserved_bytes(const Device& device) {
  const auto* d = dynamic_cast<const CudaDevice*>(&device);
  return d ? d->reserved() : 0;
}

}  // namespace tf::cuda
