// CudaDevice (cuda_device_impl.hpp), its lanes' part: process() runs one tile on a lane, its upload, kernels
// and download queued on the device's copy streams and the lane's stream (cuda_device_impl.hpp says how).
#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "conv/conv_kernels.hpp"
#include "cuda_device_impl.hpp"
#include "host_staging.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda::detail {

namespace {

// A lane's upload buffer holds up to this many tiles' uploads, where the lane's budget allows, so
// that the tiles of a band (each right below the last, see the scheduler) follow each other down
// the buffer and upload only their new rows (run_tile).
constexpr std::size_t kScrollTiles = 8;

}  // namespace

void CudaDevice::process(const TileWork& work) {
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

void CudaDevice::run_tile(const TileWork& work, Lane& l) {
  const TileJob& job = work.job;
  const Chain& chain = *job.chain;
  std::vector<bool> on_blocks;  // FFT stages run on their fixed grid (docs/design.md, contract 2)
  for (const Stage& stage : chain) on_blocks.push_back(!job.exact && fft_stage(stage));
  const TilePlan plan = plan_tile(chain, work.tile, job.src.width, job.src.height, job.border.mode, on_blocks);
  // Whether buffers.maps still holds h_maps' maps; the lane does not count on it again until this
  // tile has run (process()), so a tile that fails anywhere below leaves the next one sending its maps.
  const bool maps_kept = std::exchange(l.maps_on_device, false);
  FftPlans* fft_plans = job.exact ? nullptr : &l.fft_plans;
  const bool buffers_kept = grow_buffers(work, l, plan, fft_plans);
  const bool maps_there = stage_maps(l, plan, maps_kept && buffers_kept);
  DeviceRegion d_up;
  const TileCopy up = upload_tile(work, l, plan, maps_there, d_up);

  const cudaStream_t s = l.stream.get();
  const FftLane fft{fft_plans, &spectra_, nullptr, ordinal_};
  const DeviceRegion out = run_chain(chain, plan, taps_, l.buffers, d_up, job.src.format, job.border,
                                     info_.multiprocessors, s, fft_plans ? &fft : nullptr);
  TF_CUDA_CHECK(cudaEventRecord(l.kernels_done.get(), s));

  // The upload's end, for the telemetry and for the lane whose upload comes next: when this
  // thread sees the upload's mark (its kernels wait for it on the GPU meanwhile).
  TF_CUDA_CHECK(cudaEventSynchronize(uploads_->mark(up.copy).get()));
  const Clock::time_point up_end = Clock::now();
  uploads_->ended(up.copy, up_end);
  const TileCopy down = download_tile(work, l, out);
  const Clock::time_point kernels_end = down.queued;  // from up_end: they waited for the upload

  Telemetry& telemetry = work.telemetry;
  auto at = [&](Clock::time_point t) { return telemetry.seconds_since_epoch(t); };
  auto start = [&](CopyStream& copies, const TileCopy& c, Clock::time_point end) {
    return at(std::min(std::max(c.queued, copies.end_before(c.copy).value_or(c.queued)), end));
  };
  const int tile = work.tile.index;
  telemetry.add(
      {work.device_index, work.lane, StageKind::Upload, tile, start(*uploads_, up, up_end), at(up_end), up.bytes});
  telemetry.add({work.device_index, work.lane, StageKind::Kernel, tile, at(up_end), at(kernels_end), 0});
  telemetry.add({work.device_index, work.lane, StageKind::Download, tile, start(*downloads_, down, down.end),
                 at(down.end), down.bytes});
}

// Grows the lane's buffers when the tile needs it, within the lane's share of the budget, with room
// for the next tiles of a band too (kScrollTiles, see upload_tile) as much as the budget leaves: none
// when it is tight. False when the buffers were reallocated (the maps they held are gone).
bool CudaDevice::grow_buffers(const TileWork& work, Lane& l, const TilePlan& plan, FftPlans* fft_plans) {
  const Chain& chain = *work.job.chain;
  LaneNeeds needs = lane_needs(chain, plan, work.job.src.format, fft_plans);
  auto after = [](const DeviceBuffer& b, std::size_t need) { return std::max(b.capacity(), need); };
  auto projected = [&] {
    return after(l.buffers.upload, needs.upload) + after(l.buffers.stage[0], needs.stage) +
           after(l.buffers.stage[1], needs.stage) + after(l.buffers.scratch, needs.scratch) +
           after(l.buffers.inter, needs.inter) + after(l.buffers.maps, needs.maps) + after(l.buffers.fft, needs.fft);
  };
  const std::size_t one_upload = needs.upload;
  if (projected() <= l.buffers.bytes() && l.buffers.upload.capacity() >= one_upload * kScrollTiles) return true;
  const std::size_t allowed = lane_budget(chain);
  // The kernel spectrum is the device's (FftSpectra), counted against each lane that reads it.
  if (projected() > l.buffers.bytes() && projected() + needs.spectrum > allowed) {
    const Tile& tile = work.tile;
    throw Error(
        ErrorKind::Limit,
        fmt::format("{}: tile {} ({}x{}) needs {:.1f} MiB, over the {:.1f} MiB each lane may use", info_.id, tile.index,
                    tile.out.width, tile.out.height, (projected() + needs.spectrum) / 1048576.0, allowed / 1048576.0));
  }
  for (std::size_t tiles = kScrollTiles; tiles > 1; --tiles) {
    needs.upload = one_upload * tiles;
    if (projected() + needs.spectrum <= allowed) break;
    needs.upload = one_upload;
  }
  if (projected() <= l.buffers.bytes()) return true;
  const std::size_t before = l.buffers.bytes();
  const std::size_t upload_was = l.buffers.upload.capacity();
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
  return false;
}

// The maps into the lane's h_maps, unless the lane's last tile left the same ones on the device (then
// true): the strips of a band share theirs (only strips that meet the image's edges differ), and a
// copy of ~33 KB queued before each strip's upload cost ~1% of a host-resident job (9 taps, 8192²
// RGBA8, one H200).
bool CudaDevice::stage_maps(Lane& l, const TilePlan& plan, bool maps_kept) const {
  const std::size_t map_bytes = plan.maps.size() * sizeof(int);
  if (maps_kept && l.h_maps_bytes == map_bytes && std::memcmp(l.h_maps.data(), plan.maps.data(), map_bytes) == 0)
    return true;
  l.h_maps.reserve(map_bytes);
  std::memcpy(l.h_maps.data(), plan.maps.data(), map_bytes);
  l.h_maps_bytes = map_bytes;
  return false;
}

// Upload: the in-image source runs of tile.in, packed (see tile_plan.hpp), from compact row
// `kept` on, compact row 0 at buffer row `first_row`; a pageable image's through this lane's
// pinned staging, filled first. A tile right below the lane's last one (one run of rows each, the same columns)
// starts where the last tile's rows reach its own and uploads only the rows past them, while the buffer has room:
// the strips of a band scroll down the buffer. Else a tile right below the device's last upload, from another
// lane, has the rows the two share copied from that lane's buffer on the GPU (find_carry). So each halo row
// crosses the link once (9 taps, 8192 x 256 strips: 3.1% of the upload; 31 taps, 4096 x 512: 5.9%).
// `d_up` receives where the tile's compact row 0 lies on the device.
CudaDevice::TileCopy CudaDevice::upload_tile(const TileWork& work, Lane& l, const TilePlan& plan, bool maps_there,
                                             DeviceRegion& d_up_region) {
  const TileJob& job = work.job;
  const std::size_t ps = job.src.format.pixel_bytes();
  const cudaStream_t s = l.stream.get();
  const std::size_t map_bytes = plan.maps.size() * sizeof(int);
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
  TileCopy up;
  up.queued = Clock::now();
  {
    std::lock_guard copies(uploads_->mutex);
    const cudaStream_t us = uploads_->stream.get();
    up.copy = uploads_->next();
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
                                          job.src.row(yr.source + skip) + xr.source * ps, job.src.pitch, xr.length * ps,
                                          yr.length - skip, cudaMemcpyHostToDevice, us));
      }
    } else {
      TF_CUDA_CHECK(cudaMemcpyAsync(d_up + kept * up_pitch, l.h_in.as<std::byte>() + kept * up_pitch,
                                    up_pitch * (plan.upload_height - kept), cudaMemcpyHostToDevice, us));
    }
    const cudaEvent_t mark = uploads_->mark(up.copy).get();
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
  up.bytes =
      (maps_there ? 0 : map_bytes) + (plan.upload_pixels() - static_cast<std::size_t>(kept) * plan.upload_width) * ps;
  if (plan.rows.size() == 1) l.resident = Lane::Resident{plan.columns, plan.rows[0], first_row};
  d_up_region = {d_up, up_pitch};
  return up;
}

// Download only the tile's interior, queued once this thread sees the kernels done, so that the
// download stream never waits on another stream; the downloads queued before this one keep the
// link busy meanwhile. (With timed events a GPU-side wait left the link idle ~7 us before every
// download; with untimed ones it measured the same as this, 2026-11-24.) Returns once the tile is in
// the destination image.
CudaDevice::TileCopy CudaDevice::download_tile(const TileWork& work, Lane& l, const DeviceRegion& out) {
  const TileJob& job = work.job;
  const Tile& tile = work.tile;
  const std::size_t ps = job.src.format.pixel_bytes();
  const std::size_t row_bytes = static_cast<std::size_t>(tile.out.width) * ps;
  if (!dst_pinned_) l.h_out.reserve(row_bytes * tile.out.height);
  TF_CUDA_CHECK(cudaEventSynchronize(l.kernels_done.get()));
  TileCopy down;
  down.queued = Clock::now();
  down.bytes = row_bytes * tile.out.height;
  {
    std::lock_guard copies(downloads_->mutex);
    const cudaStream_t ds = downloads_->stream.get();
    down.copy = downloads_->next();
    if (dst_pinned_)
      TF_CUDA_CHECK(cudaMemcpy2DAsync(job.dst.row(tile.out.y) + tile.out.x * ps, job.dst.pitch, out.data, out.pitch,
                                      row_bytes, tile.out.height, cudaMemcpyDeviceToHost, ds));
    else
      TF_CUDA_CHECK(cudaMemcpy2DAsync(l.h_out.data(), row_bytes, out.data, out.pitch, row_bytes, tile.out.height,
                                      cudaMemcpyDeviceToHost, ds));
    TF_CUDA_CHECK(cudaEventRecord(downloads_->mark(down.copy).get(), ds));
  }
  TF_CUDA_CHECK(cudaEventSynchronize(downloads_->mark(down.copy).get()));
  down.end = Clock::now();
  downloads_->ended(down.copy, down.end);
  if (!dst_pinned_) {
    const auto* h_out = l.h_out.as<std::byte>();
    stage_rows(tile.out.height, row_bytes, [&](int first, int count) {
      for (int r = first; r < first + count; ++r)
        std::memcpy(job.dst.row(tile.out.y + r) + tile.out.x * ps, h_out + r * row_bytes, row_bytes);
    });
  }
  return down;
}

// Under uploads_->mutex: when the device's last upload came from another lane and the tile of `plan` starts within
// its rows (one run of rows each, the same columns), the rows the two share, up to the tile's.
CudaDevice::Carry CudaDevice::find_carry(const TilePlan& plan, int lane, std::size_t pitch) const {
  if (!last_upload_ || last_upload_->lane == lane || plan.rows.size() != 1) return {};
  const Upload& was = *last_upload_;
  const AxisRun& now = plan.rows[0];
  const int was_end = was.rows.source + was.rows.length;
  if (was.columns != plan.columns || was.pitch != pitch || now.source < was.rows.source || now.source >= was_end)
    return {};
  return Carry{was.lane, std::min(was_end, now.source + now.length) - now.source,
               was.data + static_cast<std::size_t>(now.source - was.rows.source) * pitch, was.carried};
}

}  // namespace tf::cuda::detail
