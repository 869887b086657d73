// The CUDA backend's entry points. Everything CUDA stays behind this header: callers see core's
// Device interface only.
#pragma once
#include <string>

#include "tilefilter/image.hpp"

namespace tf::cuda {

// Installs GPU discovery into core (tf::select_devices, tf::discover_gpus). Safe to call more than
// once; without CUDA in the build, discovery reports that there is no GPU backend.
void install_backend();

// "CUDA 13.0, driver 13.0" or why CUDA is unavailable.
std::string runtime_description();

// Page-locked host memory for images that will be uploaded (pageable uploads are ~7x slower), or
// nullptr when there is no GPU. Falls back to ordinary memory when pinning fails.
const PixelAllocator* pinned_allocator();

}  // namespace tf::cuda
