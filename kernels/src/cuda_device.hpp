// The CUDA Device: core's Device interface over one GPU.
#pragma once
#include <cstddef>
#include <string>

#include "tilefilter/engine/device.hpp"

namespace tf::cuda {

// Streams (lanes) per GPU unless --streams says otherwise. Measured on an H100 (docs/performance.md):
// 6 lanes of 1024-pixel tiles kept upload, kernel and download busy best (host-resident 9 taps).
constexpr int kDefaultLanes = 6;
// Tile shapes (the memory budget may ask for smaller ones): full-width strips of about this many
// pixels for chains of at most kComputeBoundFmas FMAs a pixel, square tiles of kSquareTileSide for
// heavier ones. Larger tiles pipeline worse (the first upload and last download are not overlapped)
// and gain nothing in kernel efficiency. Measurements: CudaDevice::preferred_tile.
constexpr long long kStripTilePixels = 8192 * 256;
constexpr int kSquareTileSide = 1024;
// ... but at least this many times the halo across (halo_tile_for_budget): past it, halo rows and
// uploads cost at most about a quarter more (gaussian sigma=150, 450 pixels a side: 3600-pixel
// tiles; in 1024² ones the row pass computed 1.9 times the rows).
constexpr int kHaloTileFactor = 4;
constexpr long long kComputeBoundFmas = 400;
// Chains with a cuFFT stage (docs/design.md, "The FFT path") take larger square tiles: a transform
// covers the tile grown by the kernel, so the halo's share of the work falls as tiles grow.
constexpr int kFftTileSide = 2048;

// Builds the Device for CUDA ordinal `ordinal`, shown as GPU `shown` (its id "gpuN" and DeviceInfo::ordinal:
// the machine's ordinal where this process narrowed CUDA_VISIBLE_DEVICES; -1: `ordinal`); `memory_cap` (bytes,
// 0 = the free memory) bounds what its buffers may take. Throws tf::Error (Device) when the GPU cannot be used.
DevicePtr make_cuda_device(int ordinal, std::size_t memory_cap, int shown = -1);
// The CUDA ordinal of a device make_cuda_device made (CUDA calls need it, not DeviceInfo::ordinal); -1 for
// any other device.
int cuda_ordinal(const Device& device);

// "0000:3B:00.0" for NVML.
std::string pci_bus_id(int ordinal);

}  // namespace tf::cuda
