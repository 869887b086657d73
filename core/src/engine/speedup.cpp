#include "tilefilter/engine/speedup.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tilefilter/util/error.hpp"

namespace tf {

namespace {

// (p75 - p25) / median of the timed runs: what an outlier or two does not move.
double interquartile_spread(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  const auto at = [&](double q) {
    return times[static_cast<std::size_t>(q * static_cast<double>(times.size() - 1) + 0.5)];
  };
  const double median = at(0.5);
  return median > 0 ? (at(0.75) - at(0.25)) / median : 0;
}

}  // namespace

SpeedupResult measure_speedup(const Image& src, const Chain& chain, const std::vector<DevicePtr>& devices,
                              const JobOptions& options, int repeats, const std::function<void(int, int)>& progress,
                              const std::atomic<bool>* cancel, const PixelAllocator* output_allocator,
                              int max_repeats) {
  SpeedupResult result;
  Image dst(src.width(), src.height(), src.format(), output_allocator ? *output_allocator : default_allocator());
  const int n = static_cast<int>(devices.size());
  max_repeats = std::max(repeats, max_repeats);
  int total = n * (repeats + 1);
  int done = 0;
  for (int count = 1; count <= n; ++count) {
    std::vector<DevicePtr> subset(devices.begin(), devices.begin() + count);
    std::vector<double> times;
    std::vector<JobReport> reports;
    // Run 0 is the warm-up; then `repeats` runs, and more up to max_repeats while the spread is too wide.
    for (int r = 0; r <= max_repeats; ++r) {
      if (r > repeats && interquartile_spread(times) < kSpeedupTargetSpread) break;
      if (r > repeats) ++total;
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
    p.spread = interquartile_spread(times);
    p.runs = static_cast<int>(times.size());
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
  const auto noisiest =
      std::max_element(r.points.begin(), r.points.end(),
                       [](const SpeedupPoint& a, const SpeedupPoint& b) { return a.spread < b.spread; });
  r.noisy = noisiest->spread >= kSpeedupTargetSpread;
  if (r.noisy) {
    r.bound = "noise";
    r.explanation = fmt::format(
        "The machine is too noisy to tell: on {} device(s) the middle half of {} runs still spread {:.0f}% around "
        "the median (the figure needs under {:.0f}%); other programs are taking the cores. Close them and run again.",
        noisiest->device_count, noisiest->runs, 100 * noisiest->spread, 100 * kSpeedupTargetSpread);
    return;
  }
  // The advice follows the ratio measured: more devices help only where they did here.
  const std::string advice = last.device_count < 2 ? "measure on more than one device to see how it scales"
                             : eff >= 0.7          ? "more devices help"
                             : last.speedup >= 1.2 ? "more devices help a little"
                                                   : "more devices do not help this job";
  if (compute > 0 && up + down + kernel == 0) {
    r.bound = "CPU compute";
    r.explanation =
        fmt::format("CPU workers: compute-bound, {}; {}{}.", scaling, advice,
                    eff >= 0.7 ? " until the cores or memory bandwidth run out"
                               : " (the cores are shared with other work, or memory bandwidth runs out first)");
  } else if (wall > 0 && idle / wall > 0.5) {
    r.bound = "host";
    r.explanation = fmt::format(
        "Devices idle {:.0f}% of the time: the host (tiling, copies, launch) is the bound, {}; {}: the work is too small "
        "to share.",
        100 * idle / wall, scaling, advice);
  } else if (up + down > kernel) {
    r.bound = "PCIe";
    r.explanation = fmt::format("Transfers take {:.0f}% of device time: PCIe-bound, {}; {}{}.",
                                100 * (up + down) / (up + down + kernel), scaling, advice,
                                eff >= 0.7 ? ", as each GPU has its own link" : "");
  } else {
    r.bound = "compute";
    r.explanation = fmt::format("Kernels take {:.0f}% of device time: compute-bound, {}; {}.",
                                100 * kernel / (up + down + kernel), scaling, advice);
  }
}

}  // namespace tf
