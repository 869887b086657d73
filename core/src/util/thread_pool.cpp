#include "tilefilter/util/thread_pool.hpp"

#include <sched.h>

#include <algorithm>

namespace tf {

namespace {

std::atomic<int> thread_cap{0};

int affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::thread::hardware_concurrency());
}

}  // namespace

int default_threads() {
  static const int cores = affinity_cores();  // read once: the binding a process starts with
  const int cap = thread_cap.load();
  return std::max(1, cap > 0 ? std::min(cores, cap) : cores);
}

void limit_default_threads(int n) { thread_cap = std::max(0, n); }

ThreadPool::ThreadPool(int background) {
  for (int i = 0; i < background; ++i) threads_.emplace_back([this, i] { loop(i + 1); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lk(m_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

std::shared_ptr<ThreadPool::Group> ThreadPool::submit(int n, std::function<void(int, int)> fn) {
  auto g = std::make_shared<Group>();
  g->fn = std::move(fn);
  g->n = n;
  if (n > 0 && !threads_.empty()) {
    {
      std::lock_guard lk(m_);
      queue_.push_back(g);
    }
    cv_.notify_all();
  }
  return g;
}

void ThreadPool::settle(Group& g) noexcept {
  try {
    wait(g, false);
  } catch (...) {
  }
}

void ThreadPool::wait(Group& g, bool help) {
  if (help)
    while (run_one(g, 0)) {
    }
  std::unique_lock lk(g.m);
  g.cv.wait(lk, [&] { return g.done >= g.n; });
  if (g.error) std::rethrow_exception(g.error);
}

void ThreadPool::run(int n, std::function<void(int, int)> fn) {
  if (n == 1 || threads_.empty()) {
    for (int i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  auto g = submit(n, std::move(fn));
  wait(*g, true);
}

bool ThreadPool::run_one(Group& g, int worker) {
  const int i = g.next.fetch_add(1);
  if (i >= g.n) return false;
  if (!g.failed.load()) {
    try {
      g.fn(i, worker);
    } catch (...) {
      std::lock_guard lk(g.m);
      if (!g.error) g.error = std::current_exception();
      g.failed = true;
    }
  }
  std::lock_guard lk(g.m);
  if (++g.done == g.n) g.cv.notify_all();
  return true;
}

void ThreadPool::loop(int worker) {
  for (;;) {
    std::shared_ptr<Group> g;
    {
      std::unique_lock lk(m_);
      cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_
      g = queue_.front();
      if (g->next.load() >= g->n) {
        queue_.pop_front();
        continue;
      }
    }
    run_one(*g, worker);
  }
}

}  // namespace tf
