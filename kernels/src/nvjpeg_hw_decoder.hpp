// nvJPEG's batched hardware decoder for one GPU codec lane (nvjpeg_lane.cpp): its states, initialized
// for their batch sizes, and their buffers, preallocated for the largest batch so far.
#pragma once
#include <cstddef>
#include <span>
#include <string>

#include <cuda_runtime_api.h>
#include <nvjpeg.h>

#include "nvjpeg_handles.hpp"

namespace tf::cuda {

// A state for each of the lane's two sets of decode buffers and each output (gray, interleaved RGB):
// a set's next batch is initialized while the other set's batch may still be decoding, so each set has
// its own, taken up again only once its last batch has ended. Each state's buffers are made once for
// the largest batch so far instead of in every call (a pool, as DALI and nvImageCodec keep one).
class HardwareBatchDecoder {
 public:
  // Makes the state for colour files of the first set; the others come with the first file that needs
  // them. Throws tf::Error (Device) naming `name`.
  HardwareBatchDecoder(nvjpegHandle_t hw, const std::string& name);

  // Queues one call on `stream` that decodes data[k] (lengths[k] bytes) into dest[k], all with
  // `channels` (1 or 3), the largest most_w x most_h; nobody waits for it. False when nvJPEG refused
  // the call: the state is initialized again next time, and the caller drains `stream`.
  bool decode(int set, int channels, std::span<const unsigned char* const> data, std::span<const std::size_t> lengths,
              std::span<nvjpegImage_t> dest, int most_w, int most_h, cudaStream_t stream);

 private:
  struct Pool {
    int batch = 0, w = 0, h = 0;
  };
  nvjpegHandle_t hw_;
  Owned<nvjpegJpegState_t, nvjpegJpegStateDestroy> state_[2][2];
  int batch_[2][2] = {};  // the batch size each state was initialized for
  Pool pool_[2][2];       // what each state's buffers were preallocated for
};

}  // namespace tf::cuda
