// The filter stage of BatchRun (batch_run.hpp): one worker per device, a file whole on one device or split
// across all of them.
#include <cstdio>

#include <fmt/format.h>

#include "batch_run.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::batch_detail {

namespace {

// At the end of a batch, when nothing else is coming, images from this size up are split too so
// that the other devices do not idle.
constexpr long long kTailSplitPixels = 4LL << 20;

}  // namespace

// Filters w.src into w.dst on `devs`; false when the file failed or was discarded (reported
// here). The records and the source's release are the caller's, once it has freed the devices.
bool BatchRun::filter_file(Work& w, const std::vector<DevicePtr>& devs, JobReport& rep) {
  const int i = w.index;
  JobOptions job = opt_.job;
  job.cancel = opt_.abort;
  job.progress = nullptr;
  try {
    w.dst = Image(w.src.width(), w.src.height(), w.src.format(), pool_.allocator());
    rep = run_filter(w.src.view(), w.dst.view(), chain_, devs, job);
    return true;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Cancelled) discard(i);
    else fail(i, fmt::format("{}: filter failed: {}", plan_.items[i].input, e.what()));
  } catch (const std::exception& e) {
    fail(i, fmt::format("{}: filter failed: {}", plan_.items[i].input, e.what()));
  }
  return false;
}

bool BatchRun::should_split(const Image& img) {
  if (devices_.size() < 2) return false;
  if (opt_.split_pixels > 0) return img.pixels() >= opt_.split_pixels;
  if (img.pixels() >= kAutoSplitPixels) return true;
  if (!decoders_done_ || !to_filter_.empty() || img.pixels() < kTailSplitPixels) return false;
  std::lock_guard lock(gate_mutex_);  // only when the others are idle now: waiting for them costs more
  return busy_ == 0 && !split_running_;
}

// A small image takes this worker's device; a split one waits until every device is free. New
// small images wait while a split one is waiting, so it is not starved.
void BatchRun::take_devices(bool split) {
  std::unique_lock lock(gate_mutex_);
  if (split) {
    ++split_waiting_;
    gate_cv_.wait(lock, [&] { return busy_ == 0 && !split_running_; });
    --split_waiting_;
    split_running_ = true;
  } else {
    gate_cv_.wait(lock, [&] { return split_waiting_ == 0 && !split_running_; });
    ++busy_;
  }
}

void BatchRun::give_devices(bool split) {
  {
    std::lock_guard lock(gate_mutex_);
    if (split) split_running_ = false;
    else --busy_;
  }
  gate_cv_.notify_all();
}

void BatchRun::filter_loop(int d) {
  while (auto w = to_filter_.pop()) {
    const int i = w->index;
    started(i);
    if (aborting()) {
      discard(i);
      continue;
    }
    const bool split = should_split(w->src);
    take_devices(split);
    const std::vector<DevicePtr> devs = split ? devices_ : std::vector<DevicePtr>{devices_[d]};
    if (debug_log())
      std::fprintf(stderr, "[batch] file %d %dx%d -> %s\n", i, w->src.width(), w->src.height(),
                   split ? "all devices" : devices_[d]->info().id.c_str());
    const double t0 = tel_.now();
    JobReport rep;
    const bool ok = filter_file(*w, devs, rep);
    give_devices(split);
    if (!ok) continue;
    record(i, rep, split, d, t0);
    send_to_encoder(std::move(*w));
  }
}

// The job's records on the batch clock, with the batch's device indices and unique tile numbers.
void BatchRun::record(int i, const JobReport& rep, bool split, int d, double t_start) {
  const int fallback = static_cast<int>(devices_.size());
  const int base = tile_base_.fetch_add(rep.tiles);
  for (StageRecord rec : rep.records) {
    if (!split) rec.device = rec.device == 0 ? d : fallback;
    rec.t0 += t_start;
    rec.t1 += t_start;
    rec.tile += base;
    tel_.add(rec);
  }
  FileResult& r = results_[i];
  r.filter_s = rep.wall_s;
  r.tiles = rep.tiles;
  r.retried_tiles = static_cast<int>(rep.failures.size());
  std::lock_guard lock(progress_mutex_);
  for (std::size_t k = 0; k < rep.tiles_per_device.size(); ++k) {
    if (rep.tiles_per_device[k] == 0) continue;
    const int index = split ? static_cast<int>(k) : (k == 0 ? d : fallback);
    ++images_per_device_[index];
    const std::string& name = index == fallback ? std::string("cpu-fallback") : devices_[index]->info().id;
    r.device += (r.device.empty() ? "" : "+") + name;
  }
}

}  // namespace tf::batch_detail
