// One queue of tiles pulled by every lane of every device (the queue balances unequal devices).
#include "tilefilter/engine/scheduler.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "tilefilter/engine/backend_rules.hpp"
#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/engine/fft_blocks.hpp"
#include "tilefilter/util/error.hpp"

#include "lane_pool.hpp"
#include "phase_log.hpp"

namespace tf {

namespace {

using engine::debug_log;
using engine::kSpinBeforeSleep;
using engine::LanePool;
using engine::PhaseLog;
using engine::spin_until;

struct QueuedTile {
  Tile tile;
  int attempt = 0;
  std::set<int> failed_on;  // device indices
};

// A job on the FFT path runs its FFT stages on one kind of backend, its GPUs when it has any: FFTW's
// bits are not cuFFT's (docs/design.md, contract 2). Its CPU workers then take no tile.
bool sits_out(const TileJob& job, const std::vector<DevicePtr>& devices, const Device& device) {
  auto gpu = [](const DevicePtr& d) { return d->info().kind != DeviceKind::Cpu; };
  return device.info().kind == DeviceKind::Cpu && chain_uses_fft(job) &&
         std::any_of(devices.begin(), devices.end(), gpu);
}

// Chooses the tile size: what every device can hold, and enough tiles for every lane to have work.
TileSize choose_tile_size(const TileJob& job, const std::vector<DevicePtr>& devices, const Schedule& s, int band_rows) {
  // Whole blocks of the first FFT stage's grid, so that no tile computes a block another one does
  // (also a --tile: one that cut blocks gave a GPU's cuFFT other bits for a cut block in 1 of 30
  // random cases on an H100, 2026-11-26; docs/design.md, contract 2).
  std::optional<FftBlocks> grid;
  if (chain_uses_fft(job)) {
    const auto fft = std::find_if(job.chain->begin(), job.chain->end(), stage_uses_fft);
    grid = fft_blocks(fft->convs[0].kernel, job.src.width, job.src.height);
  }
  auto nearest_blocks = [&](TileSize t) {  // a --tile: the nearest whole blocks, one at least
    if (!grid) return t;
    auto round = [](int v, int block) { return std::max(block, (v + block / 2) / block * block); };
    return TileSize{round(t.width, grid->block_w), round(t.height, grid->block_h)};
  };
  if (s.tile.width > 0 && s.tile.height > 0) return nearest_blocks(s.tile);
  if (s.tile.width > 0 || s.tile.height > 0) {
    const int side = std::max(s.tile.width, s.tile.height);
    return nearest_blocks({side, side});
  }
  int tw = 1 << 30, th = 1 << 30;
  int lanes = 0;
  for (const auto& d : devices) {
    if (sits_out(job, devices, *d)) continue;
    const TileSize p = d->preferred_tile(job);
    tw = std::min(tw, std::max(16, p.width));
    th = std::min(th, std::max(16, p.height));
    lanes += d->lanes();
  }
  // Split further while the image holds fewer whole tiles than there are lanes (edge tiles are
  // partial: counting them would leave lanes idle behind one big tile), but not below 256x256
  // pixels (halo overhead). Wide strips lose rows first (their rows stay whole), squares halve
  // both sides, other tiles their longer side.
  const long long pixels = static_cast<long long>(job.src.width) * band_rows;
  while (pixels / (static_cast<long long>(tw) * th) < lanes && static_cast<long long>(tw) * th > 256 * 256) {
    if (tw >= 4 * th && th > 64) th /= 2;
    else if (tw == th) {
      tw /= 2;
      th /= 2;
    } else if (tw > th) tw /= 2;
    else th /= 2;
  }
  if (grid) {  // automatic tiles: whole blocks within what every device holds
    tw = std::max(grid->block_w, tw / grid->block_w * grid->block_w);
    th = std::max(grid->block_h, th / grid->block_h * grid->block_h);
  }
  return {std::min(tw, job.src.width), std::min(th, job.src.height)};
}

class Run {
 public:
  Run(const TileJob& job, const std::vector<DevicePtr>& devices, const JobOptions& opt, std::vector<Tile> tiles,
      Telemetry& telemetry, PhaseLog& phases, JobReport& report)
      : job_(job),
        devices_(devices),
        opt_(opt),
        telemetry_(telemetry),
        phases_(phases),
        report_(report),
        total_(static_cast<int>(tiles.size())) {
    for (auto& t : tiles) queue_.push_back({t, 0, {}});
    report_.tiles_per_device.assign(devices.size() + 1, 0);
    device_last_.resize(devices.size());
  }

  void execute() {
    phases_.phase("run: start");
    std::vector<int> active;
    for (int d = 0; d < static_cast<int>(devices_.size()); ++d) {
      if (sits_out(job_, devices_, *devices_[d])) {
        excluded_devices_.insert(d);
        continue;
      }
      try {
        devices_[d]->begin(job_);
        active.push_back(d);
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex_);
        report_.failures.push_back({-1, devices_[d]->info().id, e.what()});
        excluded_devices_.insert(d);
      }
    }
    phases_.phase("run: devices begun");
    std::vector<std::function<void()>> lanes;
    for (int d : active)
      for (int lane = 0; lane < devices_[d]->lanes(); ++lane) lanes.push_back([this, d, lane] { work(d, lane); });
    if (active.empty()) work_on_fallback();  // every device failed to start: the CPU does it all
    else LanePool::instance().run_all(std::move(lanes));
    phases_.phase("run: lanes done");
    for (int d : active) devices_[d]->end();
    phases_.phase("run: devices ended");
    if (error_) std::rethrow_exception(error_);
  }

 private:
  bool cancelled() const { return opt_.cancel && opt_.cancel->load(); }

  // Next tile this device may take after `last` (this lane's previous tile, or null; the last tile
  // the device took when its lanes share rows, Device::lanes_share_rows); waits while other workers
  // still hold tiles that could come back.
  std::optional<QueuedTile> next(int device, const Tile* last) {
    std::unique_lock lock(mutex_);
    std::optional<unsigned> looked_since;  // changes_ when this call last spun
    const bool shared = devices_[device]->lanes_share_rows();
    for (;;) {
      if (error_ || cancelled()) return std::nullopt;
      const Tile* after = shared ? (device_last_[device] ? &*device_last_[device] : nullptr) : last;
      auto it = pick(device, after);
      if (it != queue_.end()) {
        QueuedTile t = std::move(*it);
        queue_.erase(it);
        ++in_flight_;
        running_.push_back(t.tile);
        device_last_[device] = t.tile;
        return t;
      }
      // Nothing in flight can come back: the queue is empty, or holds only tiles this device
      // failed on, which the other devices' workers (woken by finished()) will take.
      if (in_flight_ == 0) return std::nullopt;
      // The tiles in flight end soon (this is a job's end, or a retry's wait): look before sleeping,
      // again after each tile that ends.
      const unsigned seen = changes_.load(std::memory_order_relaxed);
      if (looked_since != seen) {
        looked_since = seen;
        lock.unlock();
        spin_until([&] { return changes_.load(std::memory_order_relaxed) != seen || cancelled(); }, kSpinBeforeSleep);
        lock.lock();
        continue;
      }
      cv_.wait(lock);
    }
  }

  // Which queued tile a lane takes (under mutex_): a retried one first (they are pushed to the
  // front), then the tile right below `last` (the lane's last one, or its device's), whose shared
  // halo rows the GPU still holds (docs/design.md, threading model), else one that starts a band of
  // the image. A band is a run of queued tiles each right below the one before: its first tile when
  // no running tile ends right above it, else its middle, leaving the top half to the lane (or
  // device) that is working its way down to it. So the lanes, or the devices whose lanes share
  // rows, of a job of strips take bands of consecutive strips, and split the largest band left when
  // theirs is done. Tiles narrower than the image are queued row by row, so no two follow each
  // other down: their lanes start at the first queued tile and work down its column.
  std::deque<QueuedTile>::iterator pick(int device, const Tile* last) {
    auto ok = [&](const QueuedTile& q) { return !q.failed_on.count(device); };
    auto below = [](const Tile& a, const Tile& b) {
      return b.out.x == a.out.x && b.out.width == a.out.width && b.out.y == a.out.bottom();
    };
    const auto first = std::find_if(queue_.begin(), queue_.end(), ok);
    if (first == queue_.end() || first->attempt > 0) return first;
    if (last) {
      auto it = std::find_if(queue_.begin(), queue_.end(),
                             [&](const QueuedTile& q) { return ok(q) && below(*last, q.tile); });
      if (it != queue_.end()) return it;
    }
    if (first->tile.out.width < job_.src.width) return first;
    auto best = first;
    long long best_free = -1;
    for (auto start = first; start != queue_.end();) {
      auto end = std::next(start);
      long long length = 1;
      while (end != queue_.end() && ok(*end) && below(std::prev(end)->tile, end->tile)) {
        ++end;
        ++length;
      }
      const bool taken_from_above =
          std::any_of(running_.begin(), running_.end(), [&](const Tile& t) { return below(t, start->tile); });
      const long long free = taken_from_above ? length / 2 : length;
      if (free > best_free) {
        best_free = free;
        best = taken_from_above ? std::next(start, length / 2) : start;
      }
      start = std::find_if(end, queue_.end(), ok);
    }
    return best;
  }

  void finished(const Tile& tile, bool ok) {
    int done = 0;
    {
      std::lock_guard lock(mutex_);
      --in_flight_;
      running_.erase(
          std::find_if(running_.begin(), running_.end(), [&](const Tile& t) { return t.index == tile.index; }));
      if (ok) done = ++done_;
      changes_.fetch_add(1, std::memory_order_relaxed);
    }
    cv_.notify_all();
    if (ok && opt_.progress) opt_.progress(done, total_);
  }

  void run_on_fallback(const QueuedTile& q) {
    // Last resort: the reference path in this thread. Its failure fails the job.
    const int index = static_cast<int>(devices_.size());
    const double t0 = telemetry_.now();
    cpu::filter_tile(job_, q.tile);
    telemetry_.add({index, 0, StageKind::Compute, q.tile.index, t0, telemetry_.now(),
                    static_cast<std::size_t>(q.tile.out.area()) * job_.src.format.pixel_bytes()});
    std::lock_guard lock(mutex_);
    ++report_.tiles_per_device[index];
  }

  void work(int device, int lane) {
    Device& dev = *devices_[device];
    phases_.phase("worker: running");
    std::optional<Tile> last;
    while (auto q = next(device, last ? &*last : nullptr)) {
      const Tile tile = q->tile;
      bool ok = false;
      try {
        phases_.tile(q->tile, dev.info().id.c_str(), lane);
        dev.process({job_, q->tile, lane, q->attempt, telemetry_, device});
        std::lock_guard lock(mutex_);
        ++report_.tiles_per_device[device];
        ok = true;
      } catch (const std::exception& e) {
        {
          std::lock_guard lock(mutex_);
          report_.failures.push_back({q->tile.index, dev.info().id, e.what()});
        }
        q->failed_on.insert(device);
        ++q->attempt;
        if (q->failed_on.size() + excluded_devices_.size() >= devices_.size()) {
          try {
            run_on_fallback(*q);
            ok = true;
          } catch (...) {
            std::lock_guard lock(mutex_);
            if (!error_) error_ = std::current_exception();
          }
        } else {
          std::lock_guard lock(mutex_);
          queue_.push_front(std::move(*q));  // retried next, on another device
        }
      }
      finished(tile, ok);
      last = ok ? std::optional<Tile>(tile) : std::nullopt;
    }
    phases_.phase("worker: done");
  }

  void work_on_fallback() {
    while (!queue_.empty() && !cancelled()) {
      QueuedTile q = std::move(queue_.front());
      queue_.pop_front();
      run_on_fallback(q);
      ++done_;
      if (opt_.progress) opt_.progress(done_, total_);
    }
  }

  const TileJob& job_;
  const std::vector<DevicePtr>& devices_;
  const JobOptions& opt_;
  Telemetry& telemetry_;
  PhaseLog& phases_;
  JobReport& report_;
  const int total_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<QueuedTile> queue_;
  std::vector<Tile> running_;                     // tiles workers hold now
  std::vector<std::optional<Tile>> device_last_;  // the tile each device took last
  std::set<int> excluded_devices_;
  int in_flight_ = 0;
  int done_ = 0;
  std::atomic<unsigned> changes_{0};  // tiles finished (changed under mutex_, read by next()'s spin without it)
  std::exception_ptr error_;
};

// The output rows a job computes: options.first_row .. end_row, or the whole image.
std::pair<int, int> band_of(const ImageView& src, const JobOptions& options) {
  const int end = options.end_row > 0 ? options.end_row : src.height;
  if (options.first_row < 0 || options.first_row >= end || end > src.height)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("rows {}..{} outside the image's {} rows", options.first_row, end, src.height));
  return {options.first_row, end};
}

void check_arguments(const ImageView& src, const ImageView& dst, const Chain& chain,
                     const std::vector<DevicePtr>& devices) {
  if (!src.data || !dst.data) throw Error(ErrorKind::InvalidArgument, "empty image");
  if (src.width != dst.width || src.height != dst.height || !(src.format == dst.format))
    throw Error(ErrorKind::InvalidArgument, "source and destination differ in size or format");
  if (src.data == dst.data) throw Error(ErrorKind::InvalidArgument, "source and destination are the same memory");
  if (chain.empty()) throw Error(ErrorKind::InvalidArgument, "empty filter chain");
  if (chain.size() > kMaxChainLength) throw Error(ErrorKind::Limit, "filter chain too long");
  check_chain_halo(chain);
  if (devices.empty()) throw Error(ErrorKind::InvalidArgument, "no device");
}

JobReport run_pass(const ImageView& src, const ImageView& dst, const Chain& chain,
                   const std::vector<DevicePtr>& devices, const JobOptions& options, Telemetry& telemetry,
                   PhaseLog& phases) {
  TileJob job{src, dst, &chain, options.border, options.faults, options.exact};
  JobReport report;
  const auto [first, end] = band_of(src, options);
  phases.phase("pass: start");
  const TileSize tile = choose_tile_size(job, devices, options.schedule, end - first);
  phases.phase("pass: tile size chosen");
  report.tile = tile;
  // Tiles of the band; their input rectangles still refer to the whole image, so borders are
  // synthesized exactly as when the whole image is filtered at once.
  auto tiles = plan_tiles(src.width, end - first, chain_halo(chain), tile);
  for (auto& t : tiles) {
    t.out.y += first;
    t.in.y += first;
  }
  report.tiles = static_cast<int>(tiles.size());
  Run run(job, devices, options, std::move(tiles), telemetry, phases, report);
  run.execute();
  if (options.cancel && options.cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
  return report;
}

}  // namespace

int lane_threads() { return LanePool::instance().threads(); }

JobReport run_filter(const ImageView& src, const ImageView& dst, const Chain& chain,
                     const std::vector<DevicePtr>& devices, const JobOptions& options) {
  check_arguments(src, dst, chain, devices);
  for (auto& d : devices)
    if (options.schedule.streams_per_device > 0) d->set_lanes(options.schedule.streams_per_device);
  Telemetry telemetry;
  PhaseLog phases(telemetry);
  const double t0 = telemetry.now();

  JobReport report;
  const bool one_pass = runs_in_one_pass(src, chain, devices, options);
  phases.phase(one_pass ? "job: runs in one pass" : "job: runs filter by filter");
  if (one_pass) {
    report = run_pass(src, dst, chain, devices, options, telemetry, phases);
  } else {
    if (options.first_row != 0 || (options.end_row != 0 && options.end_row != src.height))
      throw Error(ErrorKind::InvalidArgument,
                  "this chain runs filter by filter over the whole image (wrap border or an "
                  "image smaller than its halo) and cannot be filtered in bands");
    Image scratch[2];
    ImageView in = src;
    for (std::size_t s = 0; s < chain.size(); ++s) {
      const bool last = s + 1 == chain.size();
      ImageView out = dst;
      if (!last) {
        Image& buf = scratch[s % 2];
        if (buf.empty()) buf = Image(src.width, src.height, src.format);
        out = buf.view();
      }
      Chain single{chain[s]};
      JobReport pass = run_pass(in, out, single, devices, options, telemetry, phases);
      if (s == 0) report = pass;
      else {
        report.tiles += pass.tiles;
        for (std::size_t d = 0; d < pass.tiles_per_device.size(); ++d)
          report.tiles_per_device[d] += pass.tiles_per_device[d];
        report.failures.insert(report.failures.end(), pass.failures.begin(), pass.failures.end());
      }
      in = out;
    }
    report.passes = static_cast<int>(chain.size());
  }
  report.wall_s = telemetry.now() - t0;
  phases.phase("job: end");
  for (auto& d : devices) report.device_names.push_back(d->info().id);
  report.device_names.push_back("cpu-fallback");
  report.records = telemetry.records();
  return report;
}

bool runs_in_one_pass(const ImageView& shape, const Chain& chain, const std::vector<DevicePtr>& devices,
                      const JobOptions& options) {
  // A chain runs per tile in one go when every tile can re-synthesize its intermediate borders;
  // otherwise (wrap borders, images smaller than the halo) it runs filter by filter. Devices choose
  // their tile from the size and format alone, so `shape` needs no pixels.
  // One filter, or constant borders, fit every tile (chain_fits_tile): no need to ask the
  // devices for their tile size (a GPU's memory query, ~10 us of a host-resident job's start).
  // FFT stages take whole blocks of their grid, which reach past a band's halo: such jobs are not banded.
  if (!options.exact && std::any_of(chain.begin(), chain.end(), stage_uses_fft)) return false;
  if (chain.size() <= 1 || options.border.mode == BorderMode::Constant) return true;
  TileJob probe{shape, shape, &chain, options.border, options.faults};
  const TileSize tile = choose_tile_size(probe, devices, options.schedule, shape.height);
  for (const auto& t : plan_tiles(shape.width, shape.height, chain_halo(chain), tile))
    if (!chain_fits_tile(chain, t, shape.width, shape.height, options.border.mode)) return false;
  return true;
}

Image filter_image(const Image& src, const Chain& chain, const std::vector<DevicePtr>& devices,
                   const JobOptions& options, JobReport* report) {
  Image dst(src.width(), src.height(), src.format());
  JobReport r = run_filter(src.view(), dst.view(), chain, devices, options);
  if (report) *report = std::move(r);
  return dst;
}

}  // namespace tf
