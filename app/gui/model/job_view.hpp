// What the device panel and the timeline show about one finished job, whichever kind it was
// (preview, Apply, batch, a speedup run): core's telemetry records plus the little context needed
// to label them.
#pragma once
#include <QString>
#include <string>
#include <vector>

#include "tilefilter/batch/batch.hpp"
#include "tilefilter/engine/scheduler.hpp"

namespace tf::gui {

struct JobView {
  QString title;                          // "Full preview · gaussian:sigma=2 · 6000×4000"
  std::vector<std::string> device_names;  // ids, index = StageRecord::device
  std::vector<int> tiles_per_device;
  std::vector<StageRecord> records;
  std::vector<DeviceSummary> summaries;
  double wall_s = 0;
  TileSize tile;
  std::size_t pixel_bytes = 0;  // to turn record bytes into tile sizes
  // A batch: the time its threads waited for room in the memory budget, and whether that set the
  // pace (core's BatchReport::memory_bound, the rule the CLI's summary uses).
  double memory_wait_s = 0;
  std::size_t memory_budget = 0;
  bool memory_bound = false;
  bool empty() const { return records.empty(); }
};

JobView job_view(const JobReport& report, const QString& title, std::size_t pixel_bytes);
JobView job_view(const BatchReport& report, const QString& title);

// One line naming what bounded the job — the memory budget (a batch), decode/encode, upload or
// download, the kernel (CPU compute included), or idle waiting — from its records, the timings core's reports and the
// CLI's summary are made of: the stage pool (decode threads, encode threads, device lanes) busy the largest share of
// the wall time bounds it; none busy half the time means the job mostly waited.
QString bound_line(const JobView& job);

// Earliest record start, so that a timeline starts at the job's first work.
double first_start(const std::vector<StageRecord>& records);

}  // namespace tf::gui
