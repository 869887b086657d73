// Built when no CUDA compiler is found: a device pointer cannot be filtered.
#include "tilefilter/cuda_device_image.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {
void filter_device_image(const ImageView&, const ImageView&, const Chain&, const Border&, int, void*,
                         const std::vector<int>&) {
  throw Error(ErrorKind::NoGpuBackend, "this build has no GPU backend");
}
std::vector<int> device_ordinals() { return {}; }
}  // namespace tf::cuda
