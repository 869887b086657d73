// Worker pools: the codecs' (one small pool per reader or writer that compresses or decodes independent
// units, TIFF strips and tiles, PNG deflate chunks, on every core while the caller keeps the order), the
// overviews' bands, and the GPU lanes' staging of pageable images (one for the process).
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tf {

// One worker a core this process may run on: the cores of its CPU affinity (taskset, a batch
// scheduler's or MPI launcher's binding), at most limit_default_threads()'s share; at least 1.
int default_threads();
// Caps default_threads() for the rest of the process (0: no cap), e.g. at a node's cores divided by
// the MPI ranks that share it.
void limit_default_threads(int n);

// submit(n, fn) runs fn(index, worker) for index in [0, n) on the background threads (worker
// 1..size) and, in wait(help = true), on the calling thread too (worker 0).
class ThreadPool {
 public:
  struct Group {
    std::function<void(int, int)> fn;
    int n = 0;
    std::atomic<int> next{0};
    std::atomic<bool> failed{false};
    int done = 0;
    std::exception_ptr error;
    std::mutex m;
    std::condition_variable cv;
  };

  explicit ThreadPool(int background);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int workers() const { return static_cast<int>(threads_.size()) + 1; }  // including the caller

  std::shared_ptr<Group> submit(int n, std::function<void(int, int)> fn);
  // Waits for every index of g; rethrows the first exception a job threw.
  static void wait(Group& g, bool help);
  // Waits for g without helping and drops its error: a writer abandoned without finish() lets the
  // workers finish with its buffers before it frees them (destructors must not throw).
  static void settle(Group& g) noexcept;
  // submit + wait(help): the caller works too.
  void run(int n, std::function<void(int, int)> fn);

 private:
  static bool run_one(Group& g, int worker);
  void loop(int worker);

  std::vector<std::thread> threads_;
  std::deque<std::shared_ptr<Group>> queue_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace tf
