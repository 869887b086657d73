#include "tilefilter/engine/telemetry.hpp"

#include <algorithm>

namespace tf {

const char* to_string(StageKind s) {
  switch (s) {
    case StageKind::Upload: return "upload";
    case StageKind::Kernel: return "kernel";
    case StageKind::Download: return "download";
    case StageKind::Compute: return "compute";
    case StageKind::Decode: return "decode";
    case StageKind::Encode: return "encode";
  }
  return "?";
}

void Telemetry::add(const StageRecord& r) {
  std::lock_guard lock(mutex_);
  records_.push_back(r);
}

std::vector<StageRecord> Telemetry::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

void Telemetry::clear() {
  std::lock_guard lock(mutex_);
  records_.clear();
}

std::vector<DeviceSummary> summarize(const std::vector<StageRecord>& records,
                                     const std::vector<std::string>& device_names, double wall_s) {
  std::vector<DeviceSummary> out(device_names.size());
  std::vector<std::vector<std::pair<double, double>>> intervals(device_names.size());
  std::vector<std::vector<int>> tiles(device_names.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].device = static_cast<int>(i);
    out[i].name = device_names[i];
  }
  for (const auto& r : records) {
    if (r.device < 0 || r.device >= static_cast<int>(out.size())) continue;
    auto& s = out[r.device];
    const double d = r.t1 - r.t0;
    switch (r.stage) {
      case StageKind::Upload:
        s.upload_s += d;
        s.bytes_up += r.bytes;
        break;
      case StageKind::Kernel: s.kernel_s += d; break;
      case StageKind::Download:
        s.download_s += d;
        s.bytes_down += r.bytes;
        break;
      default: s.compute_s += d; break;
    }
    intervals[r.device].push_back({r.t0, r.t1});
    tiles[r.device].push_back(r.tile);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto& iv = intervals[i];
    std::sort(iv.begin(), iv.end());
    double busy = 0, cur0 = 0, cur1 = -1;
    for (auto [a, b] : iv) {
      if (a > cur1) {
        if (cur1 > cur0) busy += cur1 - cur0;
        cur0 = a;
        cur1 = b;
      } else {
        cur1 = std::max(cur1, b);
      }
    }
    if (cur1 > cur0) busy += cur1 - cur0;
    out[i].busy_s = busy;
    if (!iv.empty()) {
      out[i].first_s = iv.front().first;
      double last = iv.front().second;
      for (auto [a, b] : iv) last = std::max(last, b);
      out[i].tail_s = std::max(0.0, wall_s - last);
    }
    out[i].idle_s = std::max(0.0, wall_s - busy);
    auto& t = tiles[i];
    std::sort(t.begin(), t.end());
    out[i].tiles = static_cast<int>(std::unique(t.begin(), t.end()) - t.begin());
  }
  return out;
}

}  // namespace tf
