// One queue of tiles, pulled by every lane of every device. Unequal devices balance themselves.
// A tile that fails on a device is retried on another one, then on the CPU; the job still completes
// with identical output and the failure is reported.
#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "tilefilter/device.hpp"

namespace tf {

// The schedule is data (docs/design.md, contract 4): chosen automatically, overridable from CLI and GUI.
struct Schedule {
  int tile_width = 0, tile_height = 0;  // 0 = automatic
  int streams_per_device = 0;           // 0 = device default
};

struct JobOptions {
  Border border;
  Schedule schedule;
  FaultInjection faults;
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(int done, int total)> progress;  // called from worker threads
};

struct TileFailure {
  int tile = -1;
  std::string device;
  std::string message;
};

struct JobReport {
  int tiles = 0;
  int tile_width = 0, tile_height = 0;
  int passes = 1;  // >1 when a chain had to run filter by filter (wrap border, tiny images)
  double wall_s = 0;
  std::vector<std::string> device_names;  // index = StageRecord::device
  std::vector<int> tiles_per_device;
  std::vector<TileFailure> failures;      // failed attempts that were retried
  std::vector<StageRecord> records;
  bool cancelled = false;
};

// Filters src into dst (same size and format; dst must not alias src). Throws tf::Error on bad
// arguments, or kind Cancelled when cancelled.
JobReport run_filter(const ImageView& src, const ImageView& dst, const Chain& chain,
                     const std::vector<DevicePtr>& devices, const JobOptions& options);

// Convenience: allocates the output.
Image filter_image(const Image& src, const Chain& chain, const std::vector<DevicePtr>& devices,
                   const JobOptions& options, JobReport* report = nullptr);

}  // namespace tf
