// The CUDA Device: core's Device interface over one GPU.
#pragma once
#include <cstddef>
#include <string>

#include "tilefilter/device.hpp"

namespace tf::cuda {

// Streams (lanes) per GPU unless --streams says otherwise. Measured on an H200 (docs/performance.md):
// 3 lanes keep upload, kernel and download of three tiles in flight at once.
constexpr int kDefaultLanes = 3;
// Tiles larger than this pipeline worse (the first upload and last download are not overlapped) and
// gain nothing in kernel efficiency; the memory budget may ask for smaller ones.
constexpr int kPreferredTileSide = 2048;

// Builds the Device for CUDA ordinal `ordinal`; `memory_cap` (bytes, 0 = the free memory) bounds what
// its buffers may take. Throws tf::Error (Device) when the GPU cannot be used.
DevicePtr make_cuda_device(int ordinal, std::size_t memory_cap);

// "0000:3B:00.0" for NVML.
std::string pci_bus_id(int ordinal);

}  // namespace tf::cuda
