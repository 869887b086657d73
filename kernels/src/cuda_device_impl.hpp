// CudaDevice, core's Device over one GPU (make_cuda_device), with its lanes and copy streams; internal to
// kernels/src. Its member functions are defined in cuda_device.cpp (the job: construction, tiles, begin, samples,
// memory budgets) and cuda_lanes.cpp (the lanes: process() and the tile it runs).
//
// The CUDA Device. Per GPU: `lanes` CUDA streams, each driven by one scheduler worker thread, each
// with its own device buffers, pinned staging and events, made once and reused for every tile
// (docs/design.md, threading model), and one copy stream a direction that every lane queues its
// copies on. A lane's tile: maps + tile-with-halo upload (2-D copies, only the in-image pixels and
// only the rows that the tile above it did not bring: those are copied on the GPU from the lane that
// uploaded them, or are still in this lane's buffer) on the upload stream, the chain's kernels on the lane's
// stream once the upload is done, the interior download on the download stream once the kernels
// are done; while one lane waits on its download the others upload and compute, so upload of tile
// k+1, kernel of tile k and download of tile k-1 overlap.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chain_runner.hpp"
#include "cuda/cuda_util.hpp"
#include "cuda_device.hpp"
#include "tile_plan.hpp"
#include "tilefilter/engine/device.hpp"

namespace tf::cuda::detail {

using Clock = Telemetry::Clock;

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
  // `ordinal`: CUDA's; `shown`: the ordinal its id and info() give (make_cuda_device).
  CudaDevice(int ordinal, std::size_t memory_cap, int shown);
  ~CudaDevice() override;
  int cuda_ordinal() const { return ordinal_; }

  const DeviceInfo& info() const override { return info_; }
  int lanes() const override { return wanted_lanes_.load(); }
  void set_lanes(int lanes) override { wanted_lanes_ = std::clamp(lanes, 1, 64); }
  bool lanes_share_rows() const override { return true; }

  TileSize preferred_tile(const TileJob& job) const override;
  void begin(const TileJob& job) override;
  void end() override { job_mutex_.unlock(); }
  void process(const TileWork& work) override;
  std::optional<DeviceSample> sample() const override;

  std::size_t reserved() const { return static_cast<std::size_t>(std::max(0LL, reserved_.load())) + spectra_.bytes(); }

 private:
  std::size_t budget() const;
  std::size_t lane_budget(const Chain& chain) const;
  // run_tile's steps, in order: the lane's buffers grown for the tile, its maps staged, the upload
  // queued, the kernels, the download queued and waited for, the telemetry.
  void run_tile(const TileWork& work, Lane& l);
  bool grow_buffers(const TileWork& work, Lane& l, const TilePlan& plan, FftPlans* fft_plans);
  bool stage_maps(Lane& l, const TilePlan& plan, bool maps_kept) const;
  struct TileCopy {  // one tile's copy on uploads_ or downloads_, for the telemetry
    std::size_t copy = 0;
    Clock::time_point queued, end;
    std::size_t bytes = 0;
  };
  TileCopy upload_tile(const TileWork& work, Lane& l, const TilePlan& plan, bool maps_there, DeviceRegion& d_up);
  TileCopy download_tile(const TileWork& work, Lane& l, const DeviceRegion& out);

  // Rows of a tile that another lane's upload brought: `rows` of them (none: 0) from `from`, one pitch apart, in
  // lane `lane`'s upload buffer.
  struct Carry {
    int lane = 0;
    int rows = 0;
    const std::byte* from = nullptr;
    cudaEvent_t after = nullptr;  // that lane's own carry into those rows, when it had one (Upload::carried)
  };

  Carry find_carry(const TilePlan& plan, int lane, std::size_t pitch) const;

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

}  // namespace tf::cuda::detail
