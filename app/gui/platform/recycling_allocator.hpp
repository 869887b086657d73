// Keeps a few freed image buffers for the next image of the same size. Every preview of a large
// image needs one full-size output buffer; fresh memory costs page faults (and for pinned memory a
// cudaHostAlloc of tens of MB), a recycled one is ready. Thread-safe: buffers are released on pool
// threads (release_later.hpp).
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "tilefilter/image/image.hpp"

namespace tf::gui {

class RecyclingAllocator {
 public:
  RecyclingAllocator(const PixelAllocator& base, std::size_t max_kept_bytes);
  ~RecyclingAllocator();
  const PixelAllocator& allocator() const { return allocator_; }
  std::size_t kept_bytes() const;
  // Keeps at most `bytes` of freed buffers from now on, and frees what is kept above that.
  void keep_at_most(std::size_t bytes);

 private:
  void* allocate(std::size_t bytes);
  void release(void* p);
  std::vector<void*> drop_over_limit();  // with mutex_ held: the oldest kept buffers over max_kept_

  const PixelAllocator& base_;
  std::size_t max_kept_;
  PixelAllocator allocator_;
  mutable std::mutex mutex_;
  std::map<void*, std::size_t> live_;                // handed out, with their sizes
  std::vector<std::pair<std::size_t, void*>> kept_;  // free for reuse, oldest first
  std::size_t kept_bytes_ = 0;
};

}  // namespace tf::gui
