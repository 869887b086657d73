// The multi-device speedup measurement behind `tilefilter bench --speedup` and the GUI's demo:
// the same job on 1..N devices, each timed after a warm-up, with every device's time split from
// telemetry and one sentence naming what bounds it.
#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "tilefilter/engine/scheduler.hpp"

namespace tf {

// A device count is measured until the middle half of its runs lies within this share of their median.
constexpr double kSpeedupTargetSpread = 0.10;

struct SpeedupPoint {
  int device_count = 0;
  std::vector<std::string> devices;
  double median_s = 0, min_s = 0, max_s = 0;
  double spread = 0;  // interquartile range / median of the timed runs
  int runs = 0;       // timed runs (after the warm-up)
  double megapixels_per_s = 0;
  double speedup = 1, ideal = 1;
  std::vector<DeviceSummary> split;  // from the median run
  std::vector<StageRecord> records;  // the median run's stages (seconds since its start), for a timeline
};

struct SpeedupResult {
  std::vector<SpeedupPoint> points;
  std::string bound;        // "PCIe", "compute", "memory bandwidth", "host", "CPU compute", "noise"
  std::string explanation;  // one sentence for a person, its advice following the measured ratio
  bool noisy = false;       // a point's spread stayed at or above kSpeedupTargetSpread: no figure to trust
};

SpeedupResult measure_speedup(const Image& src, const Chain& chain, const std::vector<DevicePtr>& devices,
                              const JobOptions& options, int repeats = 5,
                              const std::function<void(int done, int total)>& progress = {},
                              const std::atomic<bool>* cancel = nullptr,
                              const PixelAllocator* output_allocator = nullptr,  // e.g. pinned memory for GPUs
                              int max_repeats = 0);  // > repeats: more runs while the spread is too wide

// Names the bound from the split of the largest device count; a noisy result says so instead.
void classify_bound(SpeedupResult& result);

}  // namespace tf
