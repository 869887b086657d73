#include "lane_pool.hpp"

#include <system_error>

namespace tf::engine {

LanePool& LanePool::instance() {
  static LanePool* pool = new LanePool;
  return *pool;
}

void LanePool::run_all(std::vector<std::function<void()>> tasks) {
  if (tasks.empty()) return;
  // The last task runs on the caller's thread, which is running already: it starts at once, where
  // a pool thread has to wake up first (on a loaded machine, late enough that another device's
  // lane could take every tile of a small job: BatchPipeline.WholeAndSplitImagesGiveTheReferenceBits).
  std::function<void()> own = std::move(tasks.back());
  tasks.pop_back();
  // Shared with the tasks: the caller may see the last one end and return while that task still
  // notifies (only a caller asleep needs it).
  auto batch = std::make_shared<Batch>();
  batch->left = tasks.size();
  {
    std::lock_guard lock(mutex_);
    for (auto& task : tasks) queue_.push_back({std::move(task), batch});
    while (idle_ < static_cast<int>(queue_.size())) {
      try {
        std::thread([this] { loop(); }).detach();
      } catch (const std::system_error&) {
        if (threads_ > 0) break;  // the threads there are take the tasks in turn
        queue_.clear();           // no thread could ever run them: only this call's tasks are queued
        throw;
      }
      ++idle_;
      ++threads_;
    }
  }
  cv_.notify_all();
  std::exception_ptr error;
  try {
    own();
  } catch (...) {
    error = std::current_exception();
  }
  batch->wait();  // the other tasks may use what `own` left behind
  if (!error) error = batch->error;
  if (error) std::rethrow_exception(error);
}

int LanePool::threads() const {
  std::lock_guard lock(mutex_);
  return threads_;
}

void LanePool::Batch::task_ended(std::exception_ptr task_error) {
  if (task_error) {
    std::lock_guard lock(mutex);
    if (!error) error = task_error;
  }
  if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::lock_guard lock(mutex);  // a caller about to sleep has looked at `left` under it
    cv.notify_all();
  }
}

void LanePool::Batch::wait() {
  for (std::size_t seen = left.load(std::memory_order_acquire); seen != 0;) {
    if (!spin_until([&] { return left.load(std::memory_order_acquire) != seen; }, kSpinBeforeSleep)) break;
    seen = left.load(std::memory_order_acquire);
  }
  std::unique_lock lock(mutex);
  cv.wait(lock, [&] { return left.load(std::memory_order_acquire) == 0; });
}

void LanePool::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return !queue_.empty(); });
    Task task = std::move(queue_.front());
    queue_.pop_front();
    --idle_;
    lock.unlock();
    std::exception_ptr error;
    try {
      task.run();
    } catch (...) {
      error = std::current_exception();
    }
    // The task's function goes before its batch can end: what it holds may be its caller's.
    const std::shared_ptr<Batch> batch = std::move(task.batch);
    task = {};
    ++idle_;  // idle again before the batch can end, so the caller's next job finds this thread
    batch->task_ended(error);
    lock.lock();
  }
}

}  // namespace tf::engine
