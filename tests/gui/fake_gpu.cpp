#include "fake_gpu.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "tilefilter/engine/cpu.hpp"

namespace tf::test {

namespace {

class FakeGpu final : public Device {
 public:
  FakeGpu(int ordinal, int streams) : streams_(streams) {
    info_.id = fmt::format("gpu{}", ordinal);
    info_.name = "Fake GPU (test double)";
    info_.kind = DeviceKind::Cuda;
    info_.ordinal = ordinal;
    info_.memory_total = std::size_t{80} << 30;
    info_.memory_free = std::size_t{78} << 30;
    info_.multiprocessors = 132;
    info_.link = "PCIe gen5 x16";
  }
  const DeviceInfo& info() const override { return info_; }
  int lanes() const override { return streams_; }
  void set_lanes(int lanes) override { streams_ = lanes; }
  TileSize preferred_tile(const TileJob&) const override { return {256, 256}; }

  void process(const TileWork& work) override {
    const TileJob& job = work.job;
    const Tile& tile = work.tile;
    const int lane = work.lane, device_index = work.device_index;
    Telemetry& t = work.telemetry;
    ++busy_;
    const std::size_t in_bytes = static_cast<std::size_t>(tile.in.area()) * job.src.format.pixel_bytes();
    const std::size_t out_bytes = static_cast<std::size_t>(tile.out.area()) * job.src.format.pixel_bytes();
    const double t0 = t.now();
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // "upload"
    const double t1 = t.now();
    cpu::filter_tile(job, tile);
    const double t2 = t.now();
    std::this_thread::sleep_for(std::chrono::microseconds(150));  // "download"
    const double t3 = t.now();
    t.add({device_index, lane, StageKind::Upload, tile.index, t0, t1, in_bytes});
    t.add({device_index, lane, StageKind::Kernel, tile.index, t1, t2, 0});
    t.add({device_index, lane, StageKind::Download, tile.index, t2, t3, out_bytes});
    --busy_;
  }

  std::optional<DeviceSample> sample() const override {
    DeviceSample s;
    s.utilization = busy_ > 0 ? 93 : 2;
    s.memory_total = info_.memory_total;
    s.memory_used = std::size_t{3} << 30;
    return s;
  }

 private:
  DeviceInfo info_;
  int streams_;
  std::atomic<int> busy_{0};
};

}  // namespace

DevicePtr make_fake_gpu(int ordinal, int streams) { return std::make_shared<FakeGpu>(ordinal, streams); }

void install_fake_gpus(int count) {
  std::vector<DevicePtr> gpus;
  for (int i = 0; i < count; ++i) gpus.push_back(make_fake_gpu(i));
  set_gpu_provider([gpus](std::size_t, const std::vector<int>&) { return GpuDiscovery{gpus, {}}; });
}

}  // namespace tf::test
