// The threads that run a job's lanes, kept from one job to the next, and the short look-then-sleep
// wait that the scheduler's lanes and callers share. Internal to the engine (core/src/engine).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tf::engine {

// How long a thread that waits for others at a job's end keeps looking after the last change it saw
// before it sleeps. A thread asleep on a condition variable ran 10-20 us after the notify, and at
// times over 100 us (one H200 machine's 16 cores, 2026-11-24). At a job's end the lanes wait for the
// last tiles, which end one after another a tile's download apart on a GPU, and the job's caller
// waits for its lanes. A CPU worker's tiles take milliseconds: its waiting lanes look for this long
// after each tile and then sleep.
constexpr std::chrono::microseconds kSpinBeforeSleep{200};

// Looks at `done()` until it holds or `limit` passes, yielding the core between looks (so a busy
// machine's other threads, CPU workers among them, still run). Returns done().
template <class Done> bool spin_until(Done done, std::chrono::microseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return done();
    std::this_thread::yield();
  }
  return true;
}

// Threads for the lanes of jobs, kept from one job to the next. Starting six threads a GPU took
// 0.1-0.3 ms of each job before its first upload and joining them 0.14 ms after its last download
// (one H200, 8192² RGBA8 from host memory; keeping them gained 2-3%, docs/performance.md). run_all()
// runs one task on the caller's thread and hands every other to an idle thread, starting threads
// until each queued task has one (so all of a job's lanes run at once, and concurrent jobs never
// wait for each other's threads), and returns when its tasks are done, rethrowing an exception one
// of them threw. The pool is never
// destroyed: its threads may have used CUDA and must not be joined during the runtime's teardown at
// exit; they wait on a condition variable until the process ends.
class LanePool {
 public:
  static LanePool& instance();

  void run_all(std::vector<std::function<void()>> tasks);

  int threads() const;

 private:
  // One run_all call's tasks. They end without a lock, and the caller looks before it sleeps. Six
  // lanes that ended together and each took the pool's mutex and then the batch's handed them on
  // from one sleeping thread to the next, 10-20 us a hand-off, and the caller slept on top: it
  // returned 30-55 us after its last lane ended, and now 1-2 us (one H200 machine, 2026-11-25; 0.5-1%
  // of a host-resident job, 9 taps 8192² RGBA8, more of a two-GPU one).
  struct Batch {
    std::atomic<std::size_t> left = 0;
    std::exception_ptr error;  // the first task's that threw: set under `mutex`, read once left is 0
    std::mutex mutex;
    std::condition_variable cv;

    void task_ended(std::exception_ptr task_error);
    // Returns once every task has ended: looks first, then sleeps.
    void wait();
  };
  struct Task {
    std::function<void()> run;
    std::shared_ptr<Batch> batch;
  };

  void loop();

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  // Threads not running a task (including those just started): changed under mutex_, but for a
  // thread whose task has ended.
  std::atomic<int> idle_ = 0;
  int threads_ = 0;  // threads started so far
};

}  // namespace tf::engine
