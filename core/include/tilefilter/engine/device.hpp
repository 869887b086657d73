// The Device interface that every backend implements (CPU here in core, CUDA in kernels/). No CUDA
// types appear here: a GPU backend installs a provider that discovery calls.
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tilefilter/engine/device_selection.hpp"
#include "tilefilter/engine/telemetry.hpp"
#include "tilefilter/engine/tiling.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/image/border.hpp"
#include "tilefilter/image/image.hpp"

namespace tf {

enum class DeviceKind { Cpu, Cuda };

struct DeviceInfo {
  std::string id;    // "cpu0", "gpu1"
  std::string name;  // "CPU worker", "NVIDIA H200"
  DeviceKind kind = DeviceKind::Cpu;
  int ordinal = 0;  // CUDA ordinal, or CPU worker number
  std::size_t memory_total = 0, memory_free = 0;
  int multiprocessors = 0;
  std::string link;  // "PCIe gen5 x16"
};

struct DeviceSample {       // a utilization/memory sample (NVML for GPUs)
  double utilization = -1;  // percent, -1 unknown
  std::size_t memory_used = 0, memory_total = 0;
};

// Test-only fault injection: a device asks before each tile whether to fail it (as if a CUDA call
// had failed). Decisions are deterministic in (device id, tile, attempt).
struct FaultInjection {
  double rate = 0;  // probability that an attempt on a non-CPU device fails (or every device if all_devices)
  bool all_devices = false;
  unsigned seed = 1;
  // A batch's GPU codec lanes become ready this many milliseconds later than they would; -1: never,
  // as if nvJPEG hung (with --codec auto the CPU codecs then take every file; --codec gpu waits, so a
  // lane that never comes stalls it: tests give -1 to auto only).
  int codec_lane_delay_ms = 0;
  bool should_fail(const std::string& device_id, int tile, int attempt) const;
};

// What stays constant over one filter job, shared by every tile.
struct TileJob {
  ImageView src;  // whole source image (host memory)
  ImageView dst;  // whole destination image, same size and format
  const Chain* chain = nullptr;
  Border border;
  FaultInjection faults;
  // Direct convolution only: no FFT path for large 2-D kernels (`--exact`; docs/design.md, contract 2).
  bool exact = false;
};

// One tile's work, as the scheduler hands it to Device::process().
struct TileWork {
  const TileJob& job;    // the job begin() was given
  const Tile& tile;      // filter tile.in of job.src into tile.out of job.dst
  int lane = 0;          // the lane that runs it, 0 <= lane < lanes()
  int attempt = 0;       // earlier failed attempts of this tile, on any device
  Telemetry& telemetry;  // where the tile's stage records go
  int device_index = 0;  // this device's place in the job's device list (StageRecord::device)
};

// A backend: CPU workers here in core, CUDA GPUs in kernels/. The threading contract, for one job
// of run_filter() (docs/design.md, "Threading model"):
//  - set_lanes(), lanes() and preferred_tile() are called on the job's thread (run_filter's caller)
//    before begin(). preferred_tile() may rely only on the job's image sizes, format, chain and
//    border: its src and dst may be shapes without pixels, and it must not depend on an earlier job.
//  - begin(job) is called once per job on that thread, before any tile; end() once, on that thread,
//    after every worker has joined, whether the job succeeded, failed or was cancelled (but not
//    when begin() threw: the device then takes no tile of the job).
//  - process() is called once per tile attempt, from one worker thread per lane: calls for
//    different lanes run at the same time, calls for one lane one after another. So a lane's state
//    (stream, buffers) needs no lock; what begin() set up is shared by all lanes and read-only.
//  - One job at a time per device: the callers serialize their jobs (the GUI through DeviceHub),
//    and the CUDA device also waits for the previous job's end() in begin().
//  - info() and sample() may be called from any thread at any time, also during a job.
class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  // Workers the scheduler runs for this device: CUDA streams, or 1 for a CPU worker.
  virtual int lanes() const { return 1; }
  virtual void set_lanes(int /*lanes*/) {}
  // Whether a tile's lane may use what the device's other lanes left on it (the CUDA device copies
  // the halo rows a tile shares with the one above it from that tile's lane, on the GPU): the
  // scheduler then gives each lane the tile right below the last one its device took, so that the
  // device's lanes work down one band together, rather than each lane down its own.
  virtual bool lanes_share_rows() const { return false; }
  // Tile size (output pixels) this device wants for the job, within its memory budget. The
  // scheduler takes the smallest width and height over the job's devices, then splits further
  // until every lane has a tile.
  virtual TileSize preferred_tile(const TileJob& job) const = 0;
  // Per-job setup (taps to the device, buffers) and teardown.
  virtual void begin(const TileJob& /*job*/) {}
  virtual void end() {}
  // Filters work.tile. May throw tf::Error (kind Device): the scheduler then retries the tile on
  // another device (with work.attempt one higher), and on the CPU reference path once every device
  // has failed it.
  virtual void process(const TileWork& work) = 0;
  virtual std::optional<DeviceSample> sample() const { return std::nullopt; }
};

using DevicePtr = std::shared_ptr<Device>;

}  // namespace tf
