#include <algorithm>
#include <chrono>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>

#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/util/error.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf::cpu {

namespace {

constexpr int kTileSide = 512, kMaxTileSide = 1024;
// Kernels up to 33 taps a side (chain halo up to 16) take smaller tiles, whose float32 planes stay in
// L2 between the convolution, the quantization and the store (192² RGBA: 576 KiB). Measured with
// tf_cpu_bench on the 2-core VM (AMD EPYC, AVX-512, 4096² RGBA8, per CPU-second, against 512² tiles):
// 9x9 Gaussian 0.40 -> 0.55 of OpenCV, 31x31 0.78 -> 0.88, 2-D 9x9 1.55 -> 1.66; 128 and 256 were
// within a few percent, 64 slower on 31 taps.
constexpr int kSmallHalo = 16, kSmallHaloTileSide = 192;

// A job that streams rows (streams_rows: one separable convolution, source rows in and destination
// rows out) takes row strips: as wide as the image where the row pass's ring (taps + 1 float rows)
// fits in three quarters of L2, else the image's width in the fewest equal parts that fit, each
// rounded up to whole 64-pixel groups; up to kStripRows rows high, fewer where that leaves under
// four strips a core (but at least four halos' worth, so recomputed halo rows stay a small part).
// Whole source and destination rows are long runs the hardware prefetchers follow, where a
// 192-pixel tile reads and writes 768-byte pieces a whole image row apart. Measured with
// tf_cpu_bench on the 2-core VM (AMD EPYC, 1 MiB L2, 4096² RGBA8, per CPU-second against OpenCV, two
// threads, 2026-11-26): sigma 1.5 0.71-0.73 (192² tiles, the plane stored after the column pass) ->
// 0.98-1.08 (4096x256), sigma 5 1.10-1.14 -> 1.19-1.23 (1408x256); on 8192² sigma 1.5 0.64 -> 0.82
// (4096x256; full-width rows, whose ring does not fit L2, 0.67).
constexpr int kStripRows = 256;
constexpr std::size_t kDefaultL2 = 1 << 20;

std::size_t l2_bytes() {
#if defined(_SC_LEVEL2_CACHE_SIZE)
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0) return std::clamp<std::size_t>(static_cast<std::size_t>(l2), 256 << 10, 4 << 20);
#endif
  return kDefaultL2;
}

TileSize strip_for(const TileJob& job) {
  const Kernel& k = (*job.chain)[0].convs[0].kernel;
  const std::size_t row_bytes = static_cast<std::size_t>(k.height + 1) * job.src.format.channels * sizeof(float);
  const int fits = static_cast<int>(std::max<std::size_t>(64, l2_bytes() / 4 * 3 / row_bytes));
  const int parts = (job.src.width + fits - 1) / fits;
  const int width = std::min(job.src.width, ((job.src.width + parts - 1) / parts + 63) / 64 * 64);
  const long long cores = default_threads();
  const long long rows = (static_cast<long long>(job.src.height) * parts + 4 * cores - 1) / (4 * cores);
  const int lowest = std::min(kStripRows, std::max(32, 4 * (k.height - 1)));
  return {width, static_cast<int>(std::clamp<long long>(rows, lowest, kStripRows))};
}

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
    if (widest <= kSmallHalo) {
      if (streams_rows(job)) return strip_for(job);
      return {kSmallHaloTileSide, kSmallHaloTileSide};
    }
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
