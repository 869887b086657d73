// One queue of tiles, pulled by every lane of every device. Unequal devices balance themselves.
// A tile that fails on a device is retried on another one, then on the CPU; the job still completes
// with identical output and the failure is reported.
#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "tilefilter/engine/device.hpp"

namespace tf {

// The schedule is data (docs/design.md, contract 4): chosen automatically, overridable from CLI and GUI.
struct Schedule {
  TileSize tile;               // 0 x 0 = automatic; one side 0 = a square of the other
  int streams_per_device = 0;  // 0 = device default
};

struct JobOptions {
  Border border;
  Schedule schedule;
  FaultInjection faults;
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(int done, int total)> progress;  // called from worker threads
  // Output rows [first_row, end_row) to compute; end_row 0 = to the bottom. With a band, src and dst
  // may be window_view()s holding only the rows the band reads and writes (streamed images).
  int first_row = 0, end_row = 0;
  // Direct convolution everywhere (bit-identical on every backend and tiling); otherwise large 2-D
  // kernels may take the CPU's FFT path (docs/design.md, contract 2).
  bool exact = false;
};

struct TileFailure {
  int tile = -1;
  std::string device;
  std::string message;
};

struct JobReport {
  int tiles = 0;
  TileSize tile;   // output pixels of a whole tile (edge tiles are smaller)
  int passes = 1;  // >1 when a chain had to run filter by filter (wrap border, tiny images)
  double wall_s = 0;
  std::vector<std::string> device_names;  // index = StageRecord::device
  std::vector<int> tiles_per_device;
  std::vector<TileFailure> failures;  // failed attempts that were retried
  std::vector<StageRecord> records;
  bool cancelled = false;
};

// Threads the scheduler has started for jobs' lanes. They persist from one job to the next (a job
// runs one lane on its caller's thread, takes idle threads for the others and starts more only when
// all are busy), so this is the most lanes, less one per job, that ran at once.
int lane_threads();

// Filters src into dst (same size and format; dst must not alias src). Throws tf::Error on bad
// arguments, or kind Cancelled when cancelled.
JobReport run_filter(const ImageView& src, const ImageView& dst, const Chain& chain,
                     const std::vector<DevicePtr>& devices, const JobOptions& options);

// True when `chain` runs over an image of `shape`'s size and format (its pixels are not read) in one pass per tile (its
// intermediate borders can be re-synthesized inside each tile); false for wrap borders and images smaller than the
// halo, which run filter by filter over the whole image and so cannot be streamed in bands, and for chains on the FFT
// path (not exact), whose fixed grid of blocks reaches past a band's halo (docs/design.md, contract 2).
bool runs_in_one_pass(const ImageView& shape, const Chain& chain, const std::vector<DevicePtr>& devices,
                      const JobOptions& options);

// Convenience: allocates the output.
Image filter_image(const Image& src, const Chain& chain, const std::vector<DevicePtr>& devices,
                   const JobOptions& options, JobReport* report = nullptr);

}  // namespace tf
