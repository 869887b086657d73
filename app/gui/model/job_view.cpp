#include "job_view.hpp"

#include <QObject>
#include <algorithm>
#include <limits>
#include <set>
#include <utility>

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
  v.memory_wait_s = report.memory_wait_s;
  v.memory_budget = report.max_inflight_bytes;
  v.memory_bound = report.memory_bound();
  v.tiles_per_device.assign(v.device_names.size(), 0);
  for (const auto& s : v.summaries)
    if (s.device >= 0 && s.device < static_cast<int>(v.tiles_per_device.size())) v.tiles_per_device[s.device] = s.tiles;
  return v;
}

namespace {
QString percent(double share) { return QStringLiteral("%1%").arg(100 * share, 0, 'f', 0); }
QString seconds(double s) {
  return s < 1 ? QStringLiteral("%1 ms").arg(s * 1e3, 0, 'f', 0) : QStringLiteral("%1 s").arg(s, 0, 'f', 2);
}
}  // namespace

QString bound_line(const JobView& job) {
  if (job.empty() || job.wall_s <= 0) return {};
  if (job.memory_bound)
    return QObject::tr(
               "Bound by the memory budget: threads waited %1 for room in its %2 MiB, not for the devices "
               "(tilefilter batch --memory raises it).")
        .arg(seconds(job.memory_wait_s))
        .arg(static_cast<double>(job.memory_budget) / 1048576.0, 0, 'f', 0);
  double decode = 0, encode = 0, upload = 0, kernel = 0, download = 0;
  std::set<int> decode_lanes, encode_lanes;
  std::set<std::pair<int, int>> device_lanes;
  for (const auto& r : job.records) {
    const double d = std::max(0.0, r.t1 - r.t0);
    switch (r.stage) {
      case StageKind::Decode: decode += d, decode_lanes.insert(r.lane); break;
      case StageKind::Encode: encode += d, encode_lanes.insert(r.lane); break;
      case StageKind::Upload: upload += d; break;
      case StageKind::Download: download += d; break;
      case StageKind::Kernel:
      case StageKind::Compute: kernel += d; break;
    }
    if (r.device >= 0) device_lanes.insert({r.device, r.lane});
  }
  auto share = [&](double busy, std::size_t lanes) { return lanes ? busy / (job.wall_s * lanes) : 0.0; };
  const double codec = std::max(share(decode, decode_lanes.size()), share(encode, encode_lanes.size()));
  const double devices = share(upload + kernel + download, device_lanes.size());
  bool cpu_only = true;
  for (const auto& [device, lane] : device_lanes)
    cpu_only = cpu_only && device < static_cast<int>(job.device_names.size()) &&
               job.device_names[static_cast<std::size_t>(device)].rfind("cpu", 0) == 0;
  const int n = static_cast<int>(device_lanes.size());
  const QString lanes = cpu_only ? (n == 1 ? QObject::tr("CPU worker") : QObject::tr("%1 CPU workers").arg(n))
                                 : (n == 1 ? QObject::tr("device lane") : QObject::tr("%1 device lanes").arg(n));
  if (std::max(codec, devices) < 0.5)
    return QObject::tr(
               "Bound by idle waiting: no stage was busy half of the %1 (devices %2, codecs %3) — "
               "start-up, tiling and hand-overs took the rest.")
        .arg(seconds(job.wall_s), percent(devices), percent(codec));
  if (codec > devices)
    return QObject::tr(
               "Bound by decode/encode: the codec threads were busy %1 of the %2, the %3 only %4 "
               "(decode %5, encode %6 of thread time).")
        .arg(percent(codec), seconds(job.wall_s), lanes, percent(devices), seconds(decode), seconds(encode));
  const double work = upload + kernel + download;
  const QString what = kernel >= upload + download ? QObject::tr("the kernel")
                       : upload >= download        ? QObject::tr("upload (host to GPU)")
                                                   : QObject::tr("download (GPU to host)");
  return QObject::tr("Bound by %1: the %2 were busy %3 of the %4, %5 of it in %6.")
      .arg(what, lanes, percent(devices), seconds(job.wall_s),
           percent(std::max({kernel, upload, download}) / std::max(work, 1e-12)), what);
}

double first_start(const std::vector<StageRecord>& records) {
  double t = std::numeric_limits<double>::infinity();
  for (const auto& r : records) t = std::min(t, r.t0);
  return records.empty() ? 0.0 : t;
}

}  // namespace tf::gui
