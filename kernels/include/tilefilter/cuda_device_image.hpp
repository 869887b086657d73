// Filtering an image that already lives in GPU memory (the C API's tf_filter_device: CuPy arrays,
// PyTorch tensors): the chain's kernels run where the pixels are, on the caller's stream, through
// the same tile plan and chain runner as the CUDA device's tiles (kernels/src/chain_runner.hpp).
#pragma once
#include <string>
#include <vector>

#include "tilefilter/filters/filter.hpp"
#include "tilefilter/image/border.hpp"
#include "tilefilter/image/image.hpp"

namespace tf::cuda {

// Filters `src` into `dst`, both views of memory on CUDA device `device` (same size and format; `dst`
// is either apart from `src` or `src` itself, same pointer and pitch, for filtering in place), queued
// on `stream` (a cudaStream_t; nullptr = the legacy default stream) without waiting for it. The chain
// reads `src` where it lies and writes `dst` where it lies when their alignment allows (the kernels'
// vector loads and stores); in place, through one intermediate on the device when the chain has none
// between its first read and its last write. Direct convolution only (docs/design.md, contract 2: the
// CPU's bits, in place or not). `split`, when it holds more than one ordinal, spreads the image over
// those GPUs in bands of rows: each band with its halo is copied to its GPU (peer copies), filtered on
// a stream of that GPU ordered after the caller's stream, and copied back into `dst`; the caller's
// stream then waits for every band (in place, the image runs whole on `device`). A chain that cannot
// run in one pass (wrap borders, images smaller than the halo) runs filter by filter on `device`
// alone. Throws tf::Error: InvalidArgument for bad views, Device for CUDA errors; without CUDA in the
// build, NoGpuBackend ("this build has no GPU backend").
void filter_device_image(const ImageView& src, const ImageView& dst, const Chain& chain, const Border& border,
                         int device, void* stream, const std::vector<int>& split = {});

// The CUDA devices' ordinals (empty without CUDA or a GPU).
std::vector<int> device_ordinals();

}  // namespace tf::cuda
