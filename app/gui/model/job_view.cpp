#include "job_view.hpp"

#include <algorithm>
#include <limits>

namespace tf::gui {

JobView job_view(const JobReport& report, const QString& title, std::size_t pixel_bytes) {
  JobView v;
  v.title = title;
  v.device_names = report.device_names;
  v.tiles_per_device = report.tiles_per_device;
  v.records = report.records;
  v.wall_s = report.wall_s;
  v.tile = report.tile;
  v.pixel_bytes = pixel_bytes;
  v.summaries = summarize(v.records, v.device_names, v.wall_s);
  return v;
}

JobView job_view(const BatchReport& report, const QString& title) {
  JobView v;
  v.title = title;
  v.device_names = report.device_names;
  v.records = report.records;
  v.wall_s = report.wall_s;
  v.summaries = report.devices.empty() ? summarize(v.records, v.device_names, v.wall_s) : report.devices;
  v.tiles_per_device.assign(v.device_names.size(), 0);
  for (const auto& s : v.summaries)
    if (s.device >= 0 && s.device < static_cast<int>(v.tiles_per_device.size())) v.tiles_per_device[s.device] = s.tiles;
  return v;
}

double first_start(const std::vector<StageRecord>& records) {
  double t = std::numeric_limits<double>::infinity();
  for (const auto& r : records) t = std::min(t, r.t0);
  return records.empty() ? 0.0 : t;
}

}  // namespace tf::gui
