// The batch's memory bound: a byte budget for pixels in flight and a pool that recycles buffers.
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>

#include "batch_internal.hpp"

namespace tf::batch {

namespace {
// Whether a kept buffer of `capacity` may serve a request of `n` bytes: best fit, but not one more than
// twice the size (it would hold memory for nothing). Both pools below choose by it.
bool fits_without_waste(std::size_t capacity, std::size_t n) { return capacity >= n && capacity <= 2 * n + (1 << 20); }
}  // namespace

bool MemoryBudget::acquire(std::size_t n, const std::function<bool()>& stop) {
  std::unique_lock lock(mutex_);
  if (used_ > 0 && used_ + n > cap_) {
    const auto t0 = std::chrono::steady_clock::now();
    while (used_ > 0 && used_ + n > cap_) {
      if (stop && stop()) return false;
      cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
    waited_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  add(n);
  return true;
}

void MemoryBudget::take(std::size_t n) {
  std::lock_guard lock(mutex_);
  add(n);
}

void MemoryBudget::add(std::size_t n) {
  used_ += n;
  peak_ = std::max(peak_, used_);
}

void MemoryBudget::release(std::size_t n) {
  if (n == 0) return;
  {
    std::lock_guard lock(mutex_);
    used_ -= std::min(used_, n);
  }
  cv_.notify_all();
}

std::size_t MemoryBudget::peak() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

double MemoryBudget::waited_s() const {
  std::lock_guard lock(mutex_);
  return waited_s_;
}

Charge& Charge::operator=(Charge&& o) noexcept {
  if (this != &o) {
    release(n_);
    budget_ = o.budget_;
    n_ = o.n_;
    o.n_ = 0;
  }
  return *this;
}

void Charge::release(std::size_t n) {
  n = std::min(n, n_);
  if (budget_ && n) budget_->release(n);
  n_ -= n;
}

BufferPool::BufferPool(const PixelAllocator& base, std::size_t retain_bytes) : base_(base), retain_(retain_bytes) {
  facade_.allocate = [this](std::size_t n) { return allocate(n); };
  facade_.release = [this](void* p) { release(p); };
}

BufferPool::~BufferPool() {
  for (auto& [cap, p] : free_) base_.release(p);
  // Buffers still in use belong to images that outlive the pool: a bug, but never free them twice.
}

void* BufferPool::allocate(std::size_t n) {
  std::vector<void*> evicted;
  {
    std::lock_guard lock(mutex_);
    auto it = free_.lower_bound(n);  // the smallest kept buffer that holds n
    if (it != free_.end() && fits_without_waste(it->first, n)) {
      void* p = it->second;
      in_use_[p] = it->first;
      free_.erase(it);
      return p;
    }
    evicted = drop_free_for(n);
  }
  for (void* p : evicted) base_.release(p);
  void* p = base_.allocate(n);
  std::lock_guard lock(mutex_);
  in_use_[p] = n;
  held_ += n;
  return p;
}

// Under mutex_: drops kept buffers, the smallest first (the least likely to fit later requests), until `n` more
// bytes fit the cap or none is left; returns them, to be given back outside the lock.
std::vector<void*> BufferPool::drop_free_for(std::size_t n) {
  std::vector<void*> dropped;
  while (!free_.empty() && held_ + n > retain_) {
    auto victim = free_.begin();
    held_ -= victim->first;
    dropped.push_back(victim->second);
    free_.erase(victim);
  }
  return dropped;
}

void BufferPool::keep_at_most(std::size_t bytes) {
  std::vector<void*> evicted;
  {
    std::lock_guard lock(mutex_);
    retain_ = bytes;
    evicted = drop_free_for(0);
  }
  for (void* p : evicted) base_.release(p);
}

void BufferPool::release(void* p) {
  bool give_back = false;
  {
    std::lock_guard lock(mutex_);
    auto it = in_use_.find(p);
    if (it == in_use_.end()) return;
    const std::size_t cap = it->second;
    in_use_.erase(it);
    if (held_ > retain_) {
      held_ -= cap;
      give_back = true;
    } else {
      free_.emplace(cap, p);
    }
  }
  if (give_back) base_.release(p);
}

namespace {
std::size_t meminfo_kib(const char* key) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  std::size_t value = 0;
  std::string unit;
  while (in >> name >> value >> unit)
    if (name == key) return value;
  return 0;
}
std::size_t cgroup_limit() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::size_t v = 0;
  if (in >> v) return v;
  return 0;  // "max" or no cgroup v2
}
}  // namespace

std::vector<unsigned char> BytesPool::take(std::size_t n) {
  {
    std::lock_guard lock(mutex_);
    auto it = free_.lower_bound(n);
    if (it != free_.end() && fits_without_waste(it->first, n)) {
      std::vector<unsigned char> v = std::move(it->second);
      kept_ -= it->first;
      free_.erase(it);
      return v;
    }
  }
  std::vector<unsigned char> v;
  v.reserve(n + n / 8);  // room for a slightly larger file next time
  return v;
}

void BytesPool::give(std::vector<unsigned char>&& v) {
  std::vector<unsigned char> mine = std::move(v);
  v = {};
  const std::size_t cap = mine.capacity();
  if (cap == 0) return;
  mine.clear();
  std::lock_guard lock(mutex_);
  if (kept_ + cap > retain_) return;  // freed on return, after the lock
  kept_ += cap;
  free_.emplace(cap, std::move(mine));
}

void give_large_buffers_back() {
#ifdef __GLIBC__
  static std::once_flag once;
  std::call_once(once, [] { (void)::mallopt(M_MMAP_THRESHOLD, 1 << 20); });
#endif
}

std::size_t default_inflight_bytes(int gpus, int gpu_codec_lanes) {
  std::size_t total =
      static_cast<std::size_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::size_t>(::sysconf(_SC_PAGE_SIZE));
  if (const std::size_t limit = cgroup_limit(); limit > 0) total = std::min(total, limit);
  std::size_t available = meminfo_kib("MemAvailable:") * 1024;
  if (available == 0) available = total;
  // A quarter of the memory, a third of what is free now, and at most 1.5 GiB: decoders and encoders
  // also hold transient buffers beside it (file bytes, codec scratch), per thread, and a batch of
  // photos keeps every core busy with far less (2000 12-MP photos on 64 cores, CPU only: a 1.6 GB peak).
  const std::size_t share = std::min(total / 4, available / 3);
  std::size_t cap = 1536ULL << 20;
  // The GPUs' own host memory comes beside the budget: with kGpuHostBytes a GPU and kLaneHostBytes a
  // GPU codec worker off a 2 GiB whole, a 2000-photo batch on 4xH200 and 64 cores with one worker a
  // GPU peaked at 1.97 GB with 512 MiB in flight (2.76 GB with 1.5 GiB), no slower: the GPUs, not the
  // budget, set the pace there.
  if (gpus > 0) {
    constexpr std::size_t kWhole = 2048ULL << 20, kProcessBytes = 512ULL << 20;
    constexpr std::size_t kGpuHostBytes = 128ULL << 20, kLaneHostBytes = 128ULL << 20;
    const std::size_t gpu_side = kProcessBytes + gpus * kGpuHostBytes + gpu_codec_lanes * kLaneHostBytes;
    cap = std::clamp<std::size_t>(kWhole > gpu_side ? kWhole - gpu_side : 0, 512ULL << 20, cap);
  }
  return std::clamp<std::size_t>(share, 256ULL << 20, cap);
}

}  // namespace tf::batch
