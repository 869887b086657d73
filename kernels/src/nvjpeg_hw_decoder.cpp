#include "nvjpeg_hw_decoder.hpp"

#include <algorithm>

namespace tf::cuda {

HardwareBatchDecoder::HardwareBatchDecoder(nvjpegHandle_t hw, const std::string& name) : hw_(hw) {
  check(nvjpegJpegStateCreate(hw_, &state_[0][1].value), name, "hardware state");
}

bool HardwareBatchDecoder::decode(int set, int channels, std::span<const unsigned char* const> data,
                                  std::span<const std::size_t> lengths, std::span<nvjpegImage_t> dest, int most_w,
                                  int most_h, cudaStream_t stream) {
  const int f = channels == 3;
  const int n = static_cast<int>(data.size());
  const nvjpegOutputFormat_t output = decoded_format(channels);
  nvjpegJpegState_t& state = state_[set][f].value;
  bool ok = state || nvjpegJpegStateCreate(hw_, &state) == NVJPEG_STATUS_SUCCESS;
  if (ok && batch_[set][f] != n) {
    ok = nvjpegDecodeBatchedInitialize(hw_, state, n, 1, output) == NVJPEG_STATUS_SUCCESS;
    batch_[set][f] = ok ? n : 0;
  }
  Pool& pool = pool_[set][f];
  if (ok && (n > pool.batch || most_w > pool.w || most_h > pool.h)) {
    // Where it fails, the call allocates as it goes.
    pool = {std::max(n, pool.batch), std::max(most_w, pool.w), std::max(most_h, pool.h)};
    (void)nvjpegDecodeBatchedPreAllocate(hw_, state, pool.batch, pool.w, pool.h,
                                         channels == 1 ? NVJPEG_CSS_GRAY : NVJPEG_CSS_444, output);
  }
  ok = ok && nvjpegDecodeBatched(hw_, state, data.data(), lengths.data(), dest.data(), stream) == NVJPEG_STATUS_SUCCESS;
  if (!ok) batch_[set][f] = 0;  // "also used to reset failed batches": initialized again next time
  return ok;
}

}  // namespace tf::cuda
