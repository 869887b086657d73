#include "recycling_allocator.hpp"

#include <algorithm>

namespace tf::gui {

RecyclingAllocator::RecyclingAllocator(const PixelAllocator& base, std::size_t max_kept_bytes)
    : base_(base), max_kept_(max_kept_bytes) {
  allocator_.allocate = [this](std::size_t bytes) { return allocate(bytes); };
  allocator_.release = [this](void* p) { release(p); };
}

RecyclingAllocator::~RecyclingAllocator() {
  for (auto& [size, p] : kept_) base_.release(p);
}

std::size_t RecyclingAllocator::kept_bytes() const {
  std::lock_guard lock(mutex_);
  return kept_bytes_;
}

void* RecyclingAllocator::allocate(std::size_t bytes) {
  void* p = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(kept_.begin(), kept_.end(), [&](const auto& k) { return k.first == bytes; });
    if (it != kept_.end()) {
      p = it->second;
      kept_bytes_ -= bytes;
      kept_.erase(it);
    }
  }
  if (!p) p = base_.allocate(bytes);
  if (p) {
    std::lock_guard lock(mutex_);
    live_[p] = bytes;
  }
  return p;
}

void RecyclingAllocator::release(void* p) {
  if (!p) return;
  std::vector<void*> drop;
  {
    std::lock_guard lock(mutex_);
    auto it = live_.find(p);
    const std::size_t bytes = it != live_.end() ? it->second : 0;
    if (it != live_.end()) live_.erase(it);
    if (bytes == 0 || bytes > max_kept_) {
      drop.push_back(p);
    } else {
      kept_.emplace_back(bytes, p);
      kept_bytes_ += bytes;
      const auto over = drop_over_limit();
      drop.insert(drop.end(), over.begin(), over.end());
    }
  }
  for (void* d : drop) base_.release(d);
}

void RecyclingAllocator::keep_at_most(std::size_t bytes) {
  std::vector<void*> drop;
  {
    std::lock_guard lock(mutex_);
    max_kept_ = bytes;
    drop = drop_over_limit();
  }
  for (void* d : drop) base_.release(d);
}

std::vector<void*> RecyclingAllocator::drop_over_limit() {
  std::vector<void*> drop;
  while (kept_bytes_ > max_kept_) {  // the oldest go first
    kept_bytes_ -= kept_.front().first;
    drop.push_back(kept_.front().second);
    kept_.erase(kept_.begin());
  }
  return drop;
}

}  // namespace tf::gui
