#include "tilefilter/engine/speedup.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tilefilter/util/error.hpp"

namespace tf {

SpeedupResult measure_speedup(const Image& src, const Chain& chain, const std::vector<DevicePtr>& devices,
                              const JobOptions& options, int repeats, const std::function<void(int, int)>& progress,
                              const std::atomic<bool>* cancel, const PixelAllocator* output_allocator) {
  SpeedupResult result;
  Image dst(src.width(), src.height(), src.format(), output_allocator ? *output_allocator : default_allocator());
  const int n = static_cast<int>(devices.size());
  const int total = n * (repeats + 1);
  int done = 0;
  for (int count = 1; count <= n; ++count) {
    std::vector<DevicePtr> subset(devices.begin(), devices.begin() + count);
    std::vector<double> times;
    std::vector<JobReport> reports;
    for (int r = 0; r <= repeats; ++r) {  // run 0 is the warm-up
      if (cancel && cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
      JobReport rep = run_filter(src.view(), dst.view(), chain, subset, options);
      if (r > 0) {
        times.push_back(rep.wall_s);
        reports.push_back(std::move(rep));
      }
      if (progress) progress(++done, total);
    }
    std::vector<std::size_t> order(times.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return times[a] < times[b]; });
    const JobReport& med = reports[order[order.size() / 2]];
    SpeedupPoint p;
    p.device_count = count;
    for (auto& d : subset) p.devices.push_back(d->info().id);
    p.median_s = times[order[order.size() / 2]];
    p.min_s = times[order.front()];
    p.max_s = times[order.back()];
    p.megapixels_per_s = src.pixels() / 1e6 / p.median_s;
    p.ideal = count;
    p.speedup = result.points.empty() ? 1.0 : result.points.front().median_s / p.median_s;
    p.split = summarize(med.records, med.device_names, med.wall_s);
    p.split.resize(count);  // drop the fallback lane when it did nothing
    p.records = med.records;
    result.points.push_back(std::move(p));
  }
  classify_bound(result);
  return result;
}

void classify_bound(SpeedupResult& r) {
  if (r.points.empty()) return;
  const SpeedupPoint& last = r.points.back();
  double up = 0, kernel = 0, down = 0, compute = 0, idle = 0, wall = 0;
  for (const auto& d : last.split) {
    up += d.upload_s;
    kernel += d.kernel_s;
    down += d.download_s;
    compute += d.compute_s;
    idle += d.idle_s;
    wall += d.busy_s + d.idle_s;
  }
  const double eff = last.speedup / last.ideal;
  const std::string scaling =
      fmt::format("{:.2f}x on {} devices ({:.0f}% of ideal)", last.speedup, last.device_count, eff * 100);
  if (compute > 0 && up + down + kernel == 0) {
    r.bound = "CPU compute";
    r.explanation = fmt::format(
        "CPU workers: compute-bound, {}; more workers help until the cores or memory bandwidth run out.", scaling);
  } else if (wall > 0 && idle / wall > 0.5) {
    r.bound = "host";
    r.explanation = fmt::format(
        "Devices idle {:.0f}% of the time: the host (tiling, copies, launch) is the bound, {}; the work is too small to share.",
        100 * idle / wall, scaling);
  } else if (up + down > kernel) {
    r.bound = "PCIe";
    r.explanation = fmt::format(
        "Transfers take {:.0f}% of device time: PCIe-bound, {}; it scales because each GPU has its own link.",
        100 * (up + down) / (up + down + kernel), scaling);
  } else {
    r.bound = "compute";
    r.explanation = fmt::format("Kernels take {:.0f}% of device time: compute-bound, {}.",
                                100 * kernel / (up + down + kernel), scaling);
  }
}

}  // namespace tf
