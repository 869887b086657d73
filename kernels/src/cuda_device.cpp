// The CUDA Device. Per GPU: `lanes` CUDA streams, each driven by one scheduler worker thread, each
// with its own device buffers, pinned staging and events, made once and reused for every tile
// (docs/design.md, threading model), and one copy stream a direction that every lane queues its
// copies on. A lane's tile: maps + tile-with-halo upload (2-D copies, only the in-image pixels and
// only the rows that the tile above it did not bring: those are copied on the GPU from the lane that
// uploaded them, or are still in this lane's buffer) on the upload stream, the chain's kernels on the lane's
// stream once the upload is done, the interior download on the download stream once the kernels
// are done; while one lane waits on its download the others upload and compute, so upload of tile
// k+1, kernel of tile k and download of tile k-1 overlap.
#include "cuda_device.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "chain_runner.hpp"
#include "conv/conv_kernels.hpp"
#include "cuda/cuda_util.hpp"
#include "host_staging.hpp"
#include "nvml.hpp"
#include "tile_plan.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {

namespace {

using Clock = Telemetry::Clock;

// Room left for the CUDA context, the kernels' own needs and other programs when no cap is given.
constexpr std::size_t kMemoryMargin = 512ULL << 20;

// A lane's upload buffer holds up to this many tiles' uploads, where the lane's budget allows, so
// that the tiles of a band (each right below the last, see the scheduler) follow each other down
// the buffer and upload only their new rows (run_tile).
constexpr std::size_t kScrollTiles = 8;

// FMAs per output pixel and channel for the whole chain (a separable pass costs its row plus its column taps).
long long fmas_per_pixel(const Chain& chain) {
  long long n = 0;
  for (const auto& stage : chain)
    for (const auto& c : stage.convs)
      n += c.separable ? static_cast<long long>(c.row.size() + c.col.size())
                       : static_cast<long long>(c.kernel.taps.size());
  return n;
}

bool is_pinned(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

struct Lane {
  explicit Lane(int device)
      : stream(device), kernels_done(device, Event::Timing::Untimed), carried(device, Event::Timing::Untimed) {}
  Stream stream;  // the tile's kernels (its copies go through the device's CopyStreams)
  // Untimed, like the copies' marks: with timed events around each tile's kernels, host-resident
  // jobs ran ~1% slower (9 taps, 8192² RGBA8, one H200). The lane dates its stages on the host clock.
  Event kernels_done;
  LaneBuffers buffers;
  FftPlans fft_plans;                // cuFFT plans on this lane's stream (FFT stages of jobs that are not exact)
  PinnedBuffer h_in, h_out, h_maps;  // staging for pageable images, and the maps
  // buffers.maps holds the first h_maps_bytes of h_maps (the last tile's maps): set when a tile has
  // run, cleared while one runs (run_tile).
  bool maps_on_device = false;
  std::size_t h_maps_bytes = 0;
  // The source rows of the last tile's upload, when they were one run: where they lie in
  // buffers.upload, so that a tile right below finds the rows the two share still there (run_tile).
  // Reset at every job's begin(), on every error and whenever the buffer is reallocated.
  struct Resident {
    std::vector<AxisRun> columns;
    AxisRun rows;
    int first_row = 0;  // buffer row of rows.source
  };
  std::optional<Resident> resident;
  // Recorded on `stream` after the rows this lane copied from another lane's upload buffer (find_carry).
  Event carried;
  // Under the device's upload mutex: the `carried` events of the other lanes' copies out of this lane's upload
  // buffer, which its next upload waits for.
  std::vector<cudaEvent_t> readers;
};

// One stream a direction for every lane's copies of a device. Copies queued on one stream follow
// each other without a gap, where copies of several streams (a stream a lane) ran below the link's
// rate: on one H200, 8 MiB copies both ways at once moved 98.9 GB/s on one stream a direction,
// 96.3 with each chunk's upload and download on one of 3-6 streams, against 101.3 for one 256 MiB
// copy each way. A timed event between two copies leaves the link idle while the first one drains
// (the same 8 MiB copies: 95.7 GB/s with a timed event after each, 92.6 with one before and one
// after), an untimed one does not (98.9). So a tile's copy is followed by one untimed event and
// nothing else: its mark, taken in turn from `marks`, reused after kMarks copies, long after a lane
// has waited for its own (a lane queues its next copy only when its last download is done).
//
// The telemetry times the copies on the host clock instead. A copy ends when its lane sees its mark
// reached. It starts at the end of the copy queued before it on the stream, or when it was queued if
// that was later or that end is not known yet (its lane has not recorded it).
struct CopyStream {
  static constexpr std::size_t kMarks = 256;
  explicit CopyStream(int device) : stream(device), ends_(kMarks, {kNone, Clock::time_point{}}) {
    for (std::size_t i = 0; i < kMarks; ++i) marks.push_back(std::make_unique<Event>(device, Event::Timing::Untimed));
  }
  // Under `mutex`: the number of the next copy, and its mark.
  std::size_t next() { return queued++; }
  const Event& mark(std::size_t copy) const { return *marks[copy % kMarks]; }

  // Telemetry, any thread: copy `copy` ended at `t`; when the copy queued before `copy` ended, if
  // its lane has said (on the host's clock: jobs, and so the telemetry's epochs, follow each other).
  void ended(std::size_t copy, Clock::time_point t) {
    std::lock_guard lock(ends_mutex_);
    ends_[copy % kMarks] = {copy, t};
  }
  std::optional<Clock::time_point> end_before(std::size_t copy) {
    if (copy == 0) return std::nullopt;
    std::lock_guard lock(ends_mutex_);
    const auto& [which, t] = ends_[(copy - 1) % kMarks];
    if (which != copy - 1) return std::nullopt;
    return t;
  }

  Stream stream;
  std::mutex mutex;
  std::vector<std::unique_ptr<Event>> marks;
  std::size_t queued = 0;

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::mutex ends_mutex_;
  std::vector<std::pair<std::size_t, Clock::time_point>> ends_;  // (copy, its end) at copy % kMarks
};

class CudaDevice final : public Device {
 public:
  CudaDevice(int ordinal, std::size_t memory_cap) : ordinal_(ordinal), cap_(memory_cap) {
    ScopedDevice on(ordinal);
    cudaDeviceProp prop{};
    TF_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
    std::size_t free = 0, total = 0;
    TF_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    std::string why;
    if (!kernels_run_here(&why)) throw Error(ErrorKind::Device, fmt::format("gpu{} ({}): {}", ordinal, prop.name, why));
    bus_id_ = pci_bus_id(ordinal);
    info_.id = fmt::format("gpu{}", ordinal);
    info_.name = prop.name;
    info_.kind = DeviceKind::Cuda;
    info_.ordinal = ordinal;
    info_.memory_total = total;
    info_.memory_free = free;
    info_.multiprocessors = prop.multiProcessorCount;
    info_.link = nvml::pcie_link(bus_id_);
  }

  ~CudaDevice() override {
    try {
      ScopedDevice on(ordinal_);
      lanes_.clear();
      uploads_.reset();
      downloads_.reset();
      spectra_.clear();
    } catch (...) {
    }
  }

  const DeviceInfo& info() const override { return info_; }
  int lanes() const override { return wanted_lanes_.load(); }
  void set_lanes(int lanes) override { wanted_lanes_ = std::clamp(lanes, 1, 64); }
  bool lanes_share_rows() const override { return true; }

  TileSize preferred_tile(const TileJob& job) const override {
    const std::size_t per_lane = lane_budget(*job.chain);
    // Our buffers need at most core's tile_working_set (upload + two stage buffers in the pixel type,
    // one float scratch); the maps and slack come out of the 10% kept back.
    const std::size_t budget = per_lane / 10 * 9;
    const Halo halo = chain_halo(*job.chain);
    if (!job.exact && std::any_of(job.chain->begin(), job.chain->end(), fft_stage)) {
      // Square tiles whose cuFFT buffers fit too (an estimate; run_tile checks the plans' own sizes).
      auto fits = [&](int side) {
        std::size_t fft = 0;
        for (const auto& stage : *job.chain)
          if (fft_stage(stage))
            fft = std::max(
                fft, fft_bytes_estimate(stage.convs[0].kernel, job.src.width, job.src.height, job.src.format.channels));
        return tile_working_set({side, side}, job.src.format, halo) + fft <= budget;
      };
      int side = kFftTileSide;
      while (side > 32 && !fits(side)) side -= 32;
      return {side, side};
    }
    // PCIe-bound chains go in full-width strips: each uploaded row is one contiguous host run
    // (separable 31 taps, 8192² RGBA8 on one H200: 9.76 Gpix/s in strips, 7.71 in 1024² tiles),
    // 256 rows high whatever the halo, whose rows the lanes carry down a band (31 taps from pinned
    // memory on two H200s, 2026-11-26, 8192x256 against the 4096x512 of 16 halos' height: one GPU
    // 11.52-11.54 Gpix/s against 11.36-11.38, two 17.72-18.99 against 17.08-18.11).
    // Compute-bound ones balance better over more, squarer tiles (2-D 31x31 on two H200: 10.34
    // Gpix/s in 1024² tiles, 9.31 in strips); one H200 computes about 8 Gpix/s at 400 FMAs a pixel.
    // Wide kernels' tiles grow with the halo (kHaloTileFactor).
    if (fmas_per_pixel(*job.chain) > kComputeBoundFmas)
      return halo_tile_for_budget(job.src.width, job.src.height, budget, job.src.format, halo, kSquareTileSide,
                                  kHaloTileFactor);
    return strip_tile_for_budget(job.src.width, budget, job.src.format, halo, kStripTilePixels, lanes_share_rows());
  }

  void begin(const TileJob& job) override {
    if (!job_mutex_.try_lock_for(std::chrono::seconds(60)))
      throw Error(ErrorKind::Device, fmt::format("{}: busy with another job for 60 s", info_.id));
    try {
      ScopedDevice on(ordinal_);
      while (static_cast<int>(lanes_.size()) < lanes()) lanes_.push_back(std::make_unique<Lane>(ordinal_));
      if (!uploads_) uploads_ = std::make_unique<CopyStream>(ordinal_);
      if (!downloads_) downloads_ = std::make_unique<CopyStream>(ordinal_);
      for (auto& lane : lanes_) {
        lane->resident.reset();  // another job's rows
        lane->readers.clear();   // copies of another job's, done when its lanes ended
      }
      last_upload_.reset();
      const std::size_t before = taps_.bytes();
      taps_.upload(*job.chain, ordinal_, uploads_->stream.get());
      reserved_ += static_cast<long long>(taps_.bytes()) - static_cast<long long>(before);
      src_pinned_ = is_pinned(job.src.data);
      dst_pinned_ = is_pinned(job.dst.data);
    } catch (...) {
      job_mutex_.unlock();
      throw;
    }
  }

  void end() override { job_mutex_.unlock(); }

  void process(const TileWork& work) override {
    // Test-only fault injection: fail as a CUDA call would, before touching the device.
    const int tile = work.tile.index;
    if (work.job.faults.should_fail(info_.id, tile, work.attempt))
      throw Error(ErrorKind::Device,
                  fmt::format("{}: injected fault on tile {} (attempt {})", info_.id, tile, work.attempt));
    ScopedDevice on(ordinal_);
    Lane& l = *lanes_.at(work.lane);
    try {
      run_tile(work, l);
      l.maps_on_device = true;
    } catch (...) {
      l.resident.reset();
      {
        std::lock_guard copies(uploads_->mutex);
        last_upload_.reset();  // its rows may not have arrived
      }
      l.stream.drain();  // nothing of this tile may still write into buffers the next tile reuses
      uploads_->stream.drain();
      downloads_->stream.drain();
      throw;
    }
  }

  std::optional<DeviceSample> sample() const override {
    if (auto s = nvml::sample(bus_id_)) return s;
    try {
      ScopedDevice on(ordinal_);
      std::size_t free = 0, total = 0;
      TF_CUDA_CHECK(cudaMemGetInfo(&free, &total));
      DeviceSample s;
      s.memory_total = total;
      s.memory_used = total - free;
      return s;
    } catch (const Error&) {
      return std::nullopt;
    }
  }

  std::size_t reserved() const { return static_cast<std::size_t>(std::max(0LL, reserved_.load())) + spectra_.bytes(); }

 private:
  // Memory this device may use: the cap, or the free memory plus what it already holds, less a margin.
  std::size_t budget() const {
    ScopedDevice on(ordinal_);
    std::size_t free = 0, total = 0;
    TF_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    std::size_t usable = free + reserved();
    usable = usable > 2 * kMemoryMargin ? usable - kMemoryMargin : usable / 2;
    return cap_ ? std::min(cap_, usable) : usable;
  }

  std::size_t lane_budget(const Chain& chain) const {
    std::size_t taps = 0;
    for (const auto& s : chain)
      for (const auto& c : s.convs) taps += (c.kernel.taps.size() + c.row.size() + c.col.size()) * sizeof(float);
    const std::size_t b = budget();
    return (b > taps ? b - taps : 0) / static_cast<std::size_t>(lanes());
  }

  void run_tile(const TileWork& work, Lane& l) {
    const TileJob& job = work.job;
    const Tile& tile = work.tile;
    Telemetry& telemetry = work.telemetry;
    const Chain& chain = *job.chain;
    const Format format = job.src.format;
    const std::size_t ps = format.pixel_bytes();
    const cudaStream_t s = l.stream.get();
    std::vector<bool> on_blocks;  // FFT stages run on their fixed grid (docs/design.md, contract 2)
    for (const Stage& stage : chain) on_blocks.push_back(!job.exact && fft_stage(stage));
    const TilePlan plan = plan_tile(chain, tile, job.src.width, job.src.height, job.border.mode, on_blocks);
    // Whether buffers.maps still holds h_maps' maps; the lane does not count on it again until this
    // tile has run (process()), so a tile that fails anywhere below leaves the next one sending its maps.
    bool maps_kept = std::exchange(l.maps_on_device, false);

    // Grow this lane's buffers when the tile needs it, within the lane's share of the budget.
    FftPlans* fft_plans = job.exact ? nullptr : &l.fft_plans;
    LaneNeeds needs = lane_needs(chain, plan, format, fft_plans);
    auto after = [](const DeviceBuffer& b, std::size_t need) { return std::max(b.capacity(), need); };
    auto projected = [&] {
      return after(l.buffers.upload, needs.upload) + after(l.buffers.stage[0], needs.stage) +
             after(l.buffers.stage[1], needs.stage) + after(l.buffers.scratch, needs.scratch) +
             after(l.buffers.inter, needs.inter) + after(l.buffers.maps, needs.maps) + after(l.buffers.fft, needs.fft);
    };
    // Room for the next tiles of a band too (kScrollTiles, the upload below), as much as the budget
    // leaves: none when it is tight.
    const std::size_t one_upload = needs.upload;
    if (projected() > l.buffers.bytes() || l.buffers.upload.capacity() < one_upload * kScrollTiles) {
      const std::size_t allowed = lane_budget(chain);
      // The kernel spectrum is the device's (FftSpectra), counted against each lane that reads it.
      if (projected() > l.buffers.bytes() && projected() + needs.spectrum > allowed)
        throw Error(ErrorKind::Limit,
                    fmt::format("{}: tile {} ({}x{}) needs {:.1f} MiB, over the {:.1f} MiB each lane may use", info_.id,
                                tile.index, tile.out.width, tile.out.height, (projected() + needs.spectrum) / 1048576.0,
                                allowed / 1048576.0));
      for (std::size_t tiles = kScrollTiles; tiles > 1; --tiles) {
        needs.upload = one_upload * tiles;
        if (projected() + needs.spectrum <= allowed) break;
        needs.upload = one_upload;
      }
      if (projected() > l.buffers.bytes()) {
        const std::size_t before = l.buffers.bytes();
        const std::size_t upload_was = l.buffers.upload.capacity();
        maps_kept = false;
        {
          // No lane may copy rows from the buffers about to be freed: none starts, and those queued end.
          std::lock_guard copies(uploads_->mutex);
          if (last_upload_ && last_upload_->lane == work.lane) last_upload_.reset();
          for (cudaEvent_t e : l.readers) TF_CUDA_CHECK(cudaEventSynchronize(e));
          l.readers.clear();
        }
        uploads_->stream.drain();
        l.buffers.reserve(needs, ordinal_);
        // A grown buffer is a new allocation (at times at the same address): it holds no rows.
        if (l.buffers.upload.capacity() != upload_was) l.resident.reset();
        reserved_ += static_cast<long long>(l.buffers.bytes()) - static_cast<long long>(before);
      }
    }

    // The maps, unless the lane's last tile left the same ones on the device: the strips of a band
    // share theirs (only strips that meet the image's edges differ), and a copy of ~33 KB queued
    // before each strip's upload cost ~1% of a host-resident job (9 taps, 8192² RGBA8, one H200).
    const std::size_t map_bytes = plan.maps.size() * sizeof(int);
    const bool maps_there =
        maps_kept && l.h_maps_bytes == map_bytes && std::memcmp(l.h_maps.data(), plan.maps.data(), map_bytes) == 0;
    if (!maps_there) {
      l.h_maps.reserve(map_bytes);
      std::memcpy(l.h_maps.data(), plan.maps.data(), map_bytes);
      l.h_maps_bytes = map_bytes;
    }

    // Upload: the in-image source runs of tile.in, packed (see tile_plan.hpp), from compact row
    // `kept` on, compact row 0 at buffer row `first_row`; a pageable image's through this lane's
    // pinned staging, filled first. A tile right below the lane's last one (one run of rows each, the same columns)
    // starts where the last tile's rows reach its own and uploads only the rows past them, while the buffer has room:
    // the strips of a band scroll down the buffer. Else a tile right below the device's last upload, from another
    // lane, has the rows the two share copied from that lane's buffer on the GPU (find_carry). So each halo row
    // crosses the link once (9 taps, 8192 x 256 strips: 3.1% of the upload; 31 taps, 4096 x 512: 5.9%).
    const std::size_t up_pitch = device_pitch(plan.upload_width, ps);
    const int buffer_rows = static_cast<int>(l.buffers.upload.capacity() / up_pitch);
    int first_row = 0, kept = 0;  // buffer row of compact row 0; compact rows already there
    if (l.resident && plan.rows.size() == 1 && l.resident->columns == plan.columns) {
      const AxisRun& was = l.resident->rows;
      const AxisRun& now = plan.rows[0];
      const int was_end = was.source + was.length;
      const int start = l.resident->first_row + (now.source - was.source);
      if (now.source >= was.source && now.source < was_end && start + now.length <= buffer_rows) {
        first_row = start;
        kept = std::min(was_end, now.source + now.length) - now.source;
      }
    }
    l.resident.reset();
    auto* d_up = l.buffers.upload.as<std::byte>() + static_cast<std::size_t>(first_row) * up_pitch;
    if (!src_pinned_) {
      l.h_in.reserve(up_pitch * plan.upload_height);
      auto* h_up = l.h_in.as<std::byte>();
      for (const auto& yr : plan.rows) {
        const int skip = std::max(0, kept - yr.compact);
        stage_rows(yr.length - skip, plan.upload_width * ps, [&](int first, int count) {
          for (int r = skip + first; r < skip + first + count; ++r)
            for (const auto& xr : plan.columns)
              std::memcpy(h_up + (yr.compact + r) * up_pitch + xr.compact * ps,
                          job.src.row(yr.source + r) + xr.source * ps, xr.length * ps);
        });
      }
    }
    const Clock::time_point up_queued = Clock::now();
    std::size_t up_copy = 0;
    {
      std::lock_guard copies(uploads_->mutex);
      const cudaStream_t us = uploads_->stream.get();
      up_copy = uploads_->next();
      if (!maps_there)
        TF_CUDA_CHECK(cudaMemcpyAsync(l.buffers.maps.data(), l.h_maps.data(), map_bytes, cudaMemcpyHostToDevice, us));
      // Other lanes' copies of this lane's last rows first; then the rows past those a carry brings.
      for (cudaEvent_t e : l.readers) TF_CUDA_CHECK(cudaStreamWaitEvent(us, e, 0));
      l.readers.clear();
      const Carry carry = kept == 0 ? find_carry(plan, work.lane, up_pitch) : Carry{};
      if (carry.rows > 0) kept = carry.rows;
      if (src_pinned_) {
        for (const auto& yr : plan.rows) {
          const int skip = std::max(0, kept - yr.compact);
          if (skip >= yr.length) continue;
          for (const auto& xr : plan.columns)
            TF_CUDA_CHECK(cudaMemcpy2DAsync(d_up + (yr.compact + skip) * up_pitch + xr.compact * ps, up_pitch,
                                            job.src.row(yr.source + skip) + xr.source * ps, job.src.pitch,
                                            xr.length * ps, yr.length - skip, cudaMemcpyHostToDevice, us));
        }
      } else {
        TF_CUDA_CHECK(cudaMemcpyAsync(d_up + kept * up_pitch, l.h_in.as<std::byte>() + kept * up_pitch,
                                      up_pitch * (plan.upload_height - kept), cudaMemcpyHostToDevice, us));
      }
      const cudaEvent_t mark = uploads_->mark(up_copy).get();
      TF_CUDA_CHECK(cudaEventRecord(mark, us));
      TF_CUDA_CHECK(cudaStreamWaitEvent(s, mark, 0));  // before the mark can be reused
      if (carry.rows > 0) {
        // On this lane's stream, past the mark and so past the upload that brought the rows, and past the
        // carry that brought them to that lane if one did; that lane's next upload, which may overwrite
        // them, waits for it.
        if (carry.after) TF_CUDA_CHECK(cudaStreamWaitEvent(s, carry.after, 0));
        TF_CUDA_CHECK(cudaMemcpyAsync(d_up, carry.from, static_cast<std::size_t>(carry.rows) * up_pitch,
                                      cudaMemcpyDeviceToDevice, s));
        TF_CUDA_CHECK(cudaEventRecord(l.carried.get(), s));
        lanes_[carry.lane]->readers.push_back(l.carried.get());
      }
      if (plan.rows.size() == 1)
        last_upload_ =
            Upload{work.lane, plan.columns, plan.rows[0], d_up, up_pitch, carry.rows > 0 ? l.carried.get() : nullptr};
      else last_upload_.reset();
    }
    const std::size_t up_bytes =
        (maps_there ? 0 : map_bytes) + (plan.upload_pixels() - static_cast<std::size_t>(kept) * plan.upload_width) * ps;
    if (plan.rows.size() == 1) l.resident = Lane::Resident{plan.columns, plan.rows[0], first_row};

    const FftLane fft{fft_plans, &spectra_, nullptr, ordinal_};
    const DeviceRegion out = run_chain(chain, plan, taps_, l.buffers, {d_up, up_pitch}, format, job.border,
                                       info_.multiprocessors, s, fft_plans ? &fft : nullptr);
    TF_CUDA_CHECK(cudaEventRecord(l.kernels_done.get(), s));

    // The upload's end, for the telemetry and for the lane whose upload comes next: when this
    // thread sees the upload's mark (its kernels wait for it on the GPU meanwhile).
    TF_CUDA_CHECK(cudaEventSynchronize(uploads_->mark(up_copy).get()));
    const Clock::time_point up_end = Clock::now();
    uploads_->ended(up_copy, up_end);

    // Download only the tile's interior, queued once this thread sees the kernels done, so that the
    // download stream never waits on another stream; the downloads queued before this one keep the
    // link busy meanwhile. (With timed events a GPU-side wait left the link idle ~7 us before every
    // download; with untimed ones it measured the same as this, 2026-11-24.)
    const std::size_t row_bytes = static_cast<std::size_t>(tile.out.width) * ps;
    if (!dst_pinned_) l.h_out.reserve(row_bytes * tile.out.height);
    TF_CUDA_CHECK(cudaEventSynchronize(l.kernels_done.get()));
    const Clock::time_point down_queued = Clock::now();
    std::size_t down_copy = 0;
    {
      std::lock_guard copies(downloads_->mutex);
      const cudaStream_t ds = downloads_->stream.get();
      down_copy = downloads_->next();
      if (dst_pinned_)
        TF_CUDA_CHECK(cudaMemcpy2DAsync(job.dst.row(tile.out.y) + tile.out.x * ps, job.dst.pitch, out.data, out.pitch,
                                        row_bytes, tile.out.height, cudaMemcpyDeviceToHost, ds));
      else
        TF_CUDA_CHECK(cudaMemcpy2DAsync(l.h_out.data(), row_bytes, out.data, out.pitch, row_bytes, tile.out.height,
                                        cudaMemcpyDeviceToHost, ds));
      TF_CUDA_CHECK(cudaEventRecord(downloads_->mark(down_copy).get(), ds));
    }
    const Clock::time_point kernels_end = down_queued;  // from up_end: they waited for the upload

    TF_CUDA_CHECK(cudaEventSynchronize(downloads_->mark(down_copy).get()));
    const Clock::time_point down_end = Clock::now();
    downloads_->ended(down_copy, down_end);
    if (!dst_pinned_) {
      const auto* h_out = l.h_out.as<std::byte>();
      stage_rows(tile.out.height, row_bytes, [&](int first, int count) {
        for (int r = first; r < first + count; ++r)
          std::memcpy(job.dst.row(tile.out.y + r) + tile.out.x * ps, h_out + r * row_bytes, row_bytes);
      });
    }

    auto at = [&](Clock::time_point t) { return telemetry.seconds_since_epoch(t); };
    auto start = [&](CopyStream& copies, std::size_t copy, Clock::time_point queued, Clock::time_point end) {
      return at(std::min(std::max(queued, copies.end_before(copy).value_or(queued)), end));
    };
    telemetry.add({work.device_index, work.lane, StageKind::Upload, tile.index,
                   start(*uploads_, up_copy, up_queued, up_end), at(up_end), up_bytes});
    telemetry.add({work.device_index, work.lane, StageKind::Kernel, tile.index, at(up_end), at(kernels_end), 0});
    telemetry.add({work.device_index, work.lane, StageKind::Download, tile.index,
                   start(*downloads_, down_copy, down_queued, down_end), at(down_end), row_bytes * tile.out.height});
  }

  // Rows of a tile that another lane's upload brought: `rows` of them (none: 0) from `from`, one pitch apart, in
  // lane `lane`'s upload buffer.
  struct Carry {
    int lane = 0;
    int rows = 0;
    const std::byte* from = nullptr;
    cudaEvent_t after = nullptr;  // that lane's own carry into those rows, when it had one (Upload::carried)
  };

  // Under uploads_->mutex: when the device's last upload came from another lane and the tile of `plan` starts within
  // its rows (one run of rows each, the same columns), the rows the two share, up to the tile's.
  Carry find_carry(const TilePlan& plan, int lane, std::size_t pitch) const {
    if (!last_upload_ || last_upload_->lane == lane || plan.rows.size() != 1) return {};
    const Upload& was = *last_upload_;
    const AxisRun& now = plan.rows[0];
    const int was_end = was.rows.source + was.rows.length;
    if (was.columns != plan.columns || was.pitch != pitch || now.source < was.rows.source || now.source >= was_end)
      return {};
    return Carry{was.lane, std::min(was_end, now.source + now.length) - now.source,
                 was.data + static_cast<std::size_t>(now.source - was.rows.source) * pitch, was.carried};
  }

  static bool kernels_run_here(std::string* why);

  const int ordinal_;
  const std::size_t cap_;
  DeviceInfo info_;
  std::string bus_id_;
  std::atomic<int> wanted_lanes_{kDefaultLanes};
  std::vector<std::unique_ptr<Lane>> lanes_;
  DeviceTaps taps_;
  FftSpectra spectra_;          // kernel spectra of the FFT path, shared by the lanes
  std::timed_mutex job_mutex_;  // one job at a time: its lanes own the buffers
  std::atomic<long long> reserved_{0};
  std::unique_ptr<CopyStream> uploads_, downloads_;  // made by the first begin()
  // The last upload queued on uploads_ when its rows were one run (under uploads_->mutex): which
  // lane's buffer holds it, and where. Reset at every begin(), on every error, and when that lane's
  // buffers are reallocated.
  struct Upload {
    int lane = 0;
    std::vector<AxisRun> columns;
    AxisRun rows;
    const std::byte* data = nullptr;  // compact row 0 (rows.source)
    std::size_t pitch = 0;
    // The lane's `carried` event when a carry brought its first rows, on that lane's stream, not the upload
    // stream: a lane copying from these rows waits for it too. (Under a halo taller than the tiles, a
    // tile's rows are mostly its predecessor's, carried from lane to lane down a column.)
    cudaEvent_t carried = nullptr;
  };
  std::optional<Upload> last_upload_;
  bool src_pinned_ = false, dst_pinned_ = false;
};

bool CudaDevice::kernels_run_here(std::string* why) { return kernels_supported(why); }

}  // namespace

DevicePtr make_cuda_device(int ordinal, std::size_t memory_cap) {
  return std::make_shared<CudaDevice>(ordinal, memory_cap);
}

std::string pci_bus_id(int ordinal) {
  char id[32] = {};
  if (cudaDeviceGetPCIBusId(id, sizeof id, ordinal) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  return id;
}

std::size_t reserved_bytes(const Device& device) {
  const auto* d = dynamic_cast<const CudaDevice*>(&device);
  return d ? d->reserved() : 0;
}

}  // namespace tf::cuda
