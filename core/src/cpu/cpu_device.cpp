#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "tilefilter/cpu.hpp"
#include "tilefilter/error.hpp"

namespace tf::cpu {

namespace {

constexpr int kTileSide = 512, kMaxTileSide = 1024;
// Kernels up to 33 taps a side (chain halo up to 16) take smaller tiles, whose float32 planes stay in
// L2 between the convolution, the quantization and the store (192² RGBA: 576 KiB). Measured with
// tf_cpu_bench on the 2-core VM (AMD EPYC, AVX-512, 4096² RGBA8, per CPU-second, against 512² tiles):
// 9x9 Gaussian 0.40 -> 0.55 of OpenCV, 31x31 0.78 -> 0.88, 2-D 9x9 1.55 -> 1.66; 128 and 256 were
// within a few percent, 64 slower on 31 taps.
constexpr int kSmallHalo = 16, kSmallHaloTileSide = 192;

class CpuDevice final : public Device {
 public:
  CpuDevice(int ordinal, double slowdown) : slowdown_(slowdown) {
    info_.id = fmt::format("cpu{}", ordinal);
    info_.name = slowdown > 1 ? fmt::format("CPU worker {} (slowed x{})", ordinal, slowdown)
                              : fmt::format("CPU worker {}", ordinal);
    info_.kind = DeviceKind::Cpu;
    info_.ordinal = ordinal;
  }
  const DeviceInfo& info() const override { return info_; }
  // Tiles that stay in L2/L3 and leave enough of them for every worker to balance; for wide halos
  // (large kernels) up to 1024 a side, at least twice the halo, so that recomputed halo rows do not
  // dominate (a 512 tile under a 450-pixel halo would compute 2.8x its rows in the row pass).
  TileSize preferred_tile(const TileJob& job) const override {
    const Halo h = chain_halo(*job.chain);
    const int widest = std::max({h.left, h.top, h.right, h.bottom});
    if (widest <= kSmallHalo) return {kSmallHaloTileSide, kSmallHaloTileSide};
    const int side = std::clamp((2 * widest + 63) / 64 * 64, kTileSide, kMaxTileSide);
    return {side, side};
  }

  void process(const TileWork& work) override {
    const TileJob& job = work.job;
    const Tile& tile = work.tile;
    Telemetry& telemetry = work.telemetry;
    if (job.faults.all_devices && job.faults.should_fail(info_.id, tile.index, work.attempt))
      throw Error(ErrorKind::Device, fmt::format("{}: injected fault on tile {}", info_.id, tile.index));
    const double t0 = telemetry.now();
    filter_tile(job, tile);
    if (slowdown_ > 1) {
      const double spent = telemetry.now() - t0;
      std::this_thread::sleep_for(std::chrono::duration<double>(spent * (slowdown_ - 1) + 1e-4 * slowdown_));
    }
    telemetry.add({work.device_index, work.lane, StageKind::Compute, tile.index, t0, telemetry.now(),
                   static_cast<std::size_t>(tile.out.area()) * job.src.format.pixel_bytes()});
  }

 private:
  DeviceInfo info_;
  double slowdown_;
};

}  // namespace

DevicePtr make_cpu_device(int ordinal, double slowdown) { return std::make_shared<CpuDevice>(ordinal, slowdown); }

}  // namespace tf::cpu
