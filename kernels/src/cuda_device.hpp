// The CUDA Device: core's Device interface over one GPU.
#pragma once
#include <cstddef>
#include <string>

#include "tilefilter/device.hpp"

namespace tf::cuda {

// Streams (lanes) per GPU unless --streams says otherwise. Measured on an H100 (docs/performance.md):
// 6 lanes of 1024-pixel tiles kept upload, kernel and download busy best (host-resident 9 taps).
constexpr int kDefaultLanes = 6;
// Tiles larger than this pipeline worse (the first upload and last download are not overlapped) and
// gain nothing in kernel efficiency; the memory budget may ask for smaller ones.
constexpr int kPreferredTileSide = 1024;

// Builds the Device for CUDA ordinal `ordinal`; `memory_cap` (bytes, 0 = the free memory) bounds what
// its buffers may take. Throws tf::Error (Device) when the GPU cannot be used.
DevicePtr make_cuda_device(int ordinal, std::size_t memory_cap);

// "0000:3B:00.0" for NVML.
std::string pci_bus_id(int ordinal);

}  // namespace tf::cuda
