// Pieces of the batch job shared by its source files; not part of the public API.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tilefilter/batch/batch.hpp"

namespace tf::batch {

// Bytes of pixels in flight. acquire() blocks until `n` more fit under the cap, except that a
// single item larger than the cap is let through when nothing else is in flight (a huge image
// must not stall the batch).
class MemoryBudget {
 public:
  explicit MemoryBudget(std::size_t cap) : cap_(cap) {}
  // False when `stop` turned true while waiting (checked a few times a second).
  bool acquire(std::size_t n, const std::function<bool()>& stop);
  // Takes `n` at once, over the cap if need be: for a thread that must not wait on the others.
  void take(std::size_t n);
  void release(std::size_t n);
  std::size_t cap() const { return cap_; }
  std::size_t peak() const;
  double waited_s() const;  // the time threads spent waiting for room, summed over the threads

 private:
  void add(std::size_t n);  // under mutex_: counts n in use

  const std::size_t cap_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::size_t used_ = 0, peak_ = 0;
  double waited_s_ = 0;
};

// Budget bytes held by one file; given back when the file leaves the pipeline (or part of it
// earlier, when its decoded source is dropped after filtering).
class Charge {
 public:
  Charge() = default;
  Charge(MemoryBudget* budget, std::size_t n) : budget_(budget), n_(n) {}
  Charge(Charge&& o) noexcept : budget_(o.budget_), n_(o.n_) { o.n_ = 0; }
  Charge& operator=(Charge&& o) noexcept;
  ~Charge() { release(n_); }
  void add(std::size_t n) { n_ += n; }
  void release(std::size_t n);
  std::size_t held() const { return n_; }

 private:
  MemoryBudget* budget_ = nullptr;
  std::size_t n_ = 0;
};

// Recycles pixel buffers (pinned ones are slow to allocate, and freeing them synchronizes the GPU).
// Holds at most `retain_bytes` from the underlying allocator: in use plus kept for reuse.
class BufferPool {
 public:
  BufferPool(const PixelAllocator& base, std::size_t retain_bytes);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  void* allocate(std::size_t n);
  void release(void* p);
  // Keeps at most `bytes` from now on (in use or free): the free buffers over it are given back now.
  void keep_at_most(std::size_t bytes);
  const PixelAllocator& allocator() const { return facade_; }

 private:
  std::vector<void*> drop_free_for(std::size_t n);

  const PixelAllocator& base_;
  std::size_t retain_;  // guarded by mutex_
  std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;         // capacity -> buffer
  std::unordered_map<void*, std::size_t> in_use_;  // buffer -> capacity
  std::size_t held_ = 0;                           // bytes taken from base_, in use or free
  PixelAllocator facade_;
};

// Recycles the byte vectors of a few MB that every file of a GPU codec batch goes through (its bytes, the
// encoded stream, the stream with its metadata): malloc maps a new one per file and unmaps it when freed
// (give_large_buffers_back), and the page faults of every thread of the process take turns in the kernel.
// Keeps at most `retain_bytes` of capacity for reuse.
class BytesPool {
 public:
  explicit BytesPool(std::size_t retain_bytes) : retain_(retain_bytes) {}
  // An empty vector with room for `n` bytes: a kept one that fits without wasting much, else a new one.
  std::vector<unsigned char> take(std::size_t n);
  // Keeps `v`'s memory for a later take() while the pool holds under its cap, else frees it.
  void give(std::vector<unsigned char>&& v);
  // A source for GpuJpegJob::stream_buffer.
  std::function<std::vector<unsigned char>(std::size_t)> source() {
    return [this](std::size_t n) { return take(n); };
  }

 private:
  const std::size_t retain_;
  std::mutex mutex_;
  std::multimap<std::size_t, std::vector<unsigned char>> free_;  // capacity -> vector
  std::size_t kept_ = 0;                                         // their capacity together
};

// A queue with a bounded number of items; pop() returns nothing once it is closed and empty.
template <class T> class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity ? capacity : 1) {}
  void push(T item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return items_.size() + reserved_ < capacity_ || closed_; });
    items_.push_back(std::move(item));
    not_empty_.notify_one();
  }
  // A place held for a later push_reserved(), so that a producer takes work only when it can queue
  // it at once: waits while queued items and held places fill the queue (returns at once once the
  // queue is closed). unreserve() gives an unused place back.
  void reserve() {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return items_.size() + reserved_ < capacity_ || closed_; });
    ++reserved_;
  }
  void push_reserved(T item) {
    std::lock_guard lock(mutex_);
    --reserved_;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
  }
  void unreserve() {
    {
      std::lock_guard lock(mutex_);
      --reserved_;
    }
    not_full_.notify_one();
  }
  // push() without waiting: false (and `item` untouched) when the queue is full.
  bool try_push(T& item) {
    std::lock_guard lock(mutex_);
    if (items_.size() + reserved_ >= capacity_ && !closed_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_all();  // a push and a reserve() may both wait
    return item;
  }
  // pop() without waiting: nothing when the queue is empty now.
  std::optional<T> try_pop() {
    std::lock_guard lock(mutex_);
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }
  bool empty() const {
    std::lock_guard lock(mutex_);
    return items_.empty();
  }
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_empty_, not_full_;
  std::deque<T> items_;
  bool closed_ = false;
  std::size_t reserved_ = 0;
};

// Default for BatchOptions::max_inflight_bytes: a share of the memory this process may use.
// `gpus` GPUs filter the batch with `gpu_codec_lanes` GPU codec workers in all: their own host memory
// (contexts, nvJPEG's buffers) leaves less of a 2 GiB whole for the budget, down to 512 MiB.
std::size_t default_inflight_bytes(int gpus = 0, int gpu_codec_lanes = 0);
// Makes the C library return every buffer of 1 MiB or more to the system when it is freed (glibc: a
// fixed mmap threshold). By default glibc raises the threshold to the largest buffer freed so far, so a
// batch's images then stay in each thread's arena: on 32 cores that held twice the budget in RSS; at
// 32 MiB the files' bytes and streams held 0.5 GiB more on four GPUs. The buffers every file goes through
// are recycled by the batch instead (BytesPool). Elsewhere a no-op.
void give_large_buffers_back();

// A note for the report when some GPUs joined a batch too late to matter: their codec workers took less
// than half of an even share of the files the GPU codecs took. nvJPEG starts on one GPU after another,
// and each GPU adds its start-up and teardown to the process: on 4xH200 (2026-11-28) 2000 photos ended
// 4.50 s after the start on two GPUs and 5.01-5.07 s on four, whose last took 213 of 1965 files. The
// note names them and, where the devices are plain "gpuN", the --devices that leaves them out; "" when
// no GPU was late (or fewer than two GPUs or 64 files went to the GPU codecs).
std::string late_gpus_note(const std::vector<GpuCodecWorkerSummary>& workers, double wall_s);

// Temporary files written by tf::temporary_name_for: ".NAME.tf-PID-N.tmp".
bool is_temporary_name(const std::string& filename, long* pid = nullptr);
// Removes temporary files under `dir` left by processes that no longer run (kill -9, power loss);
// returns how many. Never follows symbolic links.
int remove_stale_temporaries(const std::string& dir);

// True when `path` holds a finished output for `input`: a regular file (not a link), not empty,
// not older than the input, and for PNG/JPEG ending with the format's end marker.
bool output_is_complete(const std::string& path, const std::string& input);

// The job record kept in OUT_DIR (kJobRecordName): what decides the output pixels (filters, border,
// format, quality). check_job_record() throws InvalidArgument when --resume meets a folder filled by
// a different job, which would mix two jobs' results; it returns a note when there is no record.
// write_job_record() replaces it atomically.
inline constexpr const char* kJobRecordName = ".tilefilter-batch.json";
std::string check_job_record(const BatchOptions& opt);
void write_job_record(const BatchOptions& opt);

// `child` equals `parent` or lies below it (both absolute and normalized).
bool is_within(const std::string& child, const std::string& parent);
// True when the folder `dir` (which may not exist yet) resolves inside `root` once existing
// symbolic links are followed.
bool resolves_within(const std::string& dir, const std::string& root);

}  // namespace tf::batch
