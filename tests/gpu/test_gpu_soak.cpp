// No growth of device or pinned host memory across 1,000 repeated jobs (issue: hardening). Device
// memory is read with cudaMemGetInfo, host memory (pinned included) from /proc/self/status.
#include <cuda_runtime.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "gpu_test_support.hpp"
#include "tilefilter/cuda_backend.hpp"

namespace tf {
namespace {

std::size_t status_kib(const std::string& key) {  // VmRSS, VmPin, VmLck ...
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) {
      std::istringstream in(line.substr(key.size() + 1));
      std::size_t kib = 0;
      in >> kib;
      return kib;
    }
  return 0;
}

std::vector<std::size_t> device_used() {
  int n = 0;
  cudaGetDeviceCount(&n);
  std::vector<std::size_t> used;
  for (int d = 0; d < n; ++d) {
    std::size_t free = 0, total = 0;
    cudaSetDevice(d);
    cudaMemGetInfo(&free, &total);
    used.push_back(total - free);
  }
  return used;
}

TEST(GpuSoak, ThousandJobsLeaveNoDeviceOrPinnedMemoryBehind) {
  TF_REQUIRE_GPU();
  const auto& devices = gputest::gpus();
  const PixelAllocator* pinned = cuda::pinned_allocator();
  ASSERT_NE(pinned, nullptr);
  const Image src = test::random_image(700, 500, Format{PixelType::U8, 4}, 91);
  const Chain chain = parse_chain({"gaussian:sigma=1.5", "emboss"});
  const Image expected = gputest::cpu_reference(src, chain, Border{});
  auto one_job = [&](int i) {
    JobOptions opt;
    const int side = (i % 3 == 0) ? 0 : 128 + 64 * (i % 5);
    opt.schedule.tile = {side, side};
    Image in(src.width(), src.height(), src.format(), *pinned), out(src.width(), src.height(), src.format(), *pinned);
    std::memcpy(in.data(), src.data(), src.size_bytes());
    run_filter(in.view(), out.view(), chain, devices, opt);
    return out;
  };
  for (int i = 0; i < 50; ++i) one_job(i);  // warm-up: per-lane buffers reach their size
  // ... mostly: with several GPUs a lane grows its buffers to the largest tile only when it happens to
  // pull one, which may come late (on 4xH100 a GPU's lane grew by 6 MiB between jobs 500 and 1000). A
  // leak grows without the device's own count of its lane buffers (reserved_bytes); lane buffers stop
  // at their largest tile. So memory may grow only with that count, and by no more than a bound in all.
  auto reserved = [&] {
    std::vector<std::size_t> r;
    for (const DevicePtr& d : devices) r.push_back(cuda::reserved_bytes(*d));
    return r;
  };
  const auto dev_before = device_used();
  const auto res_before = reserved();
  const std::size_t rss_before = status_kib("VmRSS"), pin_before = status_kib("VmPin") + status_kib("VmLck");
  std::vector<std::size_t> dev_half, res_half;
  for (int i = 0; i < 1000; ++i) {
    if (i == 500) dev_half = device_used(), res_half = reserved();
    Image out = one_job(i);
    if (i % 250 == 0) ASSERT_TRUE(gputest::same_bits(expected, out)) << "job " << i;
  }
  const auto dev_after = device_used();
  const auto res_after = reserved();
  const std::size_t rss_after = status_kib("VmRSS"), pin_after = status_kib("VmPin") + status_kib("VmLck");
  // A lane's buffers for the largest tile of this job (the whole 700x500 RGBA8 image: its input with
  // halo, two stages and a float intermediate) times the lanes of a GPU: the most they may add in all,
  // with the driver's 2 MiB pages around the buffers that grow (on 4xH100 a GPU's lane buffers grew
  // 14.3 MiB and its memory in use 22 MiB, 0.6 MiB past the bound without the pages).
  const std::size_t slack = 4u << 20;  // the driver maps device memory in 2 MiB pages
  const std::size_t lane_bound = std::size_t{16} * 700 * 500 * 4 + 2 * slack;
  ASSERT_EQ(dev_before.size(), devices.size()) << "the test's GPUs are every visible one";
  for (std::size_t d = 0; d < dev_before.size(); ++d) {
    const double mib = 1048576.0;
    std::printf(
        "[soak] gpu%zu device memory in use: %.1f MiB before, %.1f after 500 jobs, %.1f after 1000; lane "
        "buffers %.1f, %.1f, %.1f MiB\n",
        d, dev_before[d] / mib, dev_half[d] / mib, dev_after[d] / mib, res_before[d] / mib, res_half[d] / mib,
        res_after[d] / mib);
    EXPECT_LE(dev_after[d], dev_before[d] + lane_bound) << "gpu" << d << ": more than lane buffers reaching their size";
    if (res_after[d] == res_half[d])
      EXPECT_LE(dev_after[d], dev_half[d] + slack) << "gpu" << d << ": memory grows while the lane buffers do not";
  }
  std::printf("[soak] host RSS %.1f -> %.1f MiB, pinned/locked %.1f -> %.1f MiB\n", rss_before / 1024.0,
              rss_after / 1024.0, pin_before / 1024.0, pin_after / 1024.0);
  EXPECT_LE(rss_after, rss_before + 32 * 1024);
  EXPECT_LE(pin_after, pin_before + 1024);
}

}  // namespace
}  // namespace tf
