// With TILEFILTER_DEBUG, the phases of a job and which lane took which tile, printed once the job's
// lanes have joined. Internal to the engine (core/src/engine).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tilefilter/engine/telemetry.hpp"
#include "tilefilter/engine/tiling.hpp"

namespace tf::engine {

inline bool debug_log() {
  static const bool on = std::getenv("TILEFILTER_DEBUG") != nullptr;
  return on;
}

// With TILEFILTER_DEBUG: when a job reaches each phase, in ms since its start (where host-resident
// jobs lose time before their first upload and after their last download), and which lane takes
// which tile. Kept in memory and printed when the job ends: printed as they came, the phases of six
// lanes that ended together waited for each other on stderr's lock, which moved the phases after
// them by tens of microseconds. Any thread may add one; the job's own thread prints them once its
// lanes have joined.
class PhaseLog {
 public:
  explicit PhaseLog(const Telemetry& telemetry) : telemetry_(telemetry) {
    if (debug_log()) entries_.resize(kCapacity);
  }
  PhaseLog(const PhaseLog&) = delete;
  PhaseLog& operator=(const PhaseLog&) = delete;
  ~PhaseLog() {
    const std::size_t n = std::min(next_.load(), entries_.size());
    for (std::size_t i = 0; i < n; ++i) {
      const Entry& e = entries_[i];
      if (!e.device) {
        std::fprintf(stderr, "[scheduler] %8.3f ms %s\n", e.ms, e.phase);
        continue;
      }
      std::fprintf(stderr, "[scheduler] %8.3f ms tile %d (%d,%d) %dx%d -> %s lane %d\n", e.ms, e.tile, e.out.x, e.out.y,
                   e.out.width, e.out.height, e.device, e.lane);
    }
    if (next_ > entries_.size() && !entries_.empty())
      std::fprintf(stderr, "[scheduler] %zu more not kept\n", next_.load() - entries_.size());
  }

  void phase(const char* what) { add({telemetry_.now() * 1e3, what, 0, {}, nullptr, 0}); }
  // `device` must outlive the job (a Device's info().id does).
  void tile(const Tile& tile, const char* device, int lane) {
    add({telemetry_.now() * 1e3, nullptr, tile.index, tile.out, device, lane});
  }

 private:
  static constexpr std::size_t kCapacity = 4096;
  struct Entry {
    double ms = 0;
    const char* phase = nullptr;
    int tile = 0;
    Rect out;
    const char* device = nullptr;
    int lane = 0;
  };
  void add(const Entry& e) {
    if (entries_.empty()) return;
    const std::size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i < entries_.size()) entries_[i] = e;
  }

  const Telemetry& telemetry_;
  std::vector<Entry> entries_;  // empty without TILEFILTER_DEBUG
  std::atomic<std::size_t> next_ = 0;
};

}  // namespace tf::engine
