// Telemetry is always on and cheap: every stage of every tile (upload, kernel, download on a GPU
// stream; a CPU tile; decode and encode in batch) becomes one record on one clock. The CLI summary,
// the JSON report, the GUI panel and the speedup bench all read these records.
#pragma once
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace tf {

enum class StageKind { Upload, Kernel, Download, Compute, Decode, Encode };
const char* to_string(StageKind s);

struct StageRecord {
  int device = -1;  // index into the job's device list; -1 for host threads (decode/encode)
  int lane = 0;     // CUDA stream or worker thread within the device
  StageKind stage = StageKind::Compute;
  int tile = -1;          // tile index, or file index in batch
  double t0 = 0, t1 = 0;  // seconds since the telemetry epoch
  std::size_t bytes = 0;
};

class Telemetry {
 public:
  using Clock = std::chrono::steady_clock;
  Telemetry() : epoch_(Clock::now()) {}

  Clock::time_point epoch() const { return epoch_; }
  double seconds_since_epoch(Clock::time_point t) const { return std::chrono::duration<double>(t - epoch_).count(); }
  double now() const { return seconds_since_epoch(Clock::now()); }

  void add(const StageRecord& r);
  std::vector<StageRecord> records() const;
  void clear();

 private:
  Clock::time_point epoch_;
  mutable std::mutex mutex_;
  std::vector<StageRecord> records_;
};

// Per-device totals derived from records over a wall-clock window.
struct DeviceSummary {
  int device = -1;
  std::string name;
  int tiles = 0;
  double upload_s = 0, kernel_s = 0, download_s = 0, compute_s = 0;
  double busy_s = 0;  // union of the device's stage intervals
  double idle_s = 0;  // wall - busy
  // When the device's first stage began and how long before the job's end its last one ended: the
  // job's own start and finish (tile choice, threads, launches) as against its pipeline's idle gaps.
  double first_s = 0, tail_s = 0;
  std::size_t bytes_up = 0, bytes_down = 0;
  double mean_utilization = -1;  // NVML, percent; -1 when unknown
};
std::vector<DeviceSummary> summarize(const std::vector<StageRecord>& records,
                                     const std::vector<std::string>& device_names, double wall_s);

}  // namespace tf
