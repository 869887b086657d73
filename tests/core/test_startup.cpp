// Start-up (docs/design.md, "Start-up"): the choice to leave the GPUs alone for small work, the
// steps recorded from the process's start, and the CLI's --verbose that prints them.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "test_support.hpp"
#include "tilefilter/batch/batch.hpp"
#include "tilefilter/engine/device.hpp"
#include "tilefilter/engine/startup.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf {
namespace {

TEST(Startup, SmallWorkStaysOnTheCpuAndLargeWorkGoesToTheGpus) {
  const long long fmas = chain_fmas_per_pixel(parse_chain({"gaussian:sigma=1.5"}));
  EXPECT_EQ(fmas, 22);  // radius 5: 11 row taps + 11 column taps
  // A 640x480 photo on 2 cores and 4 GPUs: far below what starting a GPU costs.
  const StartupChoice small = choose_cpu_for_small_work({640.0 * 480, 3, fmas, 0}, 2, 4);
  EXPECT_TRUE(small.cpu_only) << small.reason;
  EXPECT_LT(small.cpu_s, small.gpu_s);
  EXPECT_NE(small.reason.find("CPU workers only"), std::string::npos) << small.reason;
  // A 2-D 31x31 kernel over 1 Gpix on 2 cores: hours of CPU work, seconds of GPU start.
  const long long big_fmas = chain_fmas_per_pixel(parse_chain({"gaussian:sigma=10"}));
  const StartupChoice big = choose_cpu_for_small_work({1e9, 4, big_fmas * 20, 0}, 2, 1);
  EXPECT_FALSE(big.cpu_only) << big.reason;
  EXPECT_NE(big.reason.find("GPUs"), std::string::npos) << big.reason;
  // Without a GPU the driver shows, nothing is decided here: discovery finds none and says why.
  EXPECT_FALSE(choose_cpu_for_small_work({640.0 * 480, 3, fmas, 0}, 2, 0).cpu_only);
}

TEST(Startup, GpuCodecsCostTheirStartToo) {
  const WorkEstimate photos{200 * 12e6, 3, 22, 200 * 12e6, false};
  WorkEstimate with_codecs = photos;
  with_codecs.gpu_codecs = true;
  const StartupChoice a = choose_cpu_for_small_work(photos, 64, 4);
  const StartupChoice b = choose_cpu_for_small_work(with_codecs, 64, 4);
  EXPECT_GT(b.gpu_start_s, a.gpu_start_s);
  EXPECT_DOUBLE_EQ(a.cpu_s, b.cpu_s);
}

// The choices the measured jobs call for (docs/performance.md, "Start-up"): 12 Mpix photos, sigma 1.5.
TEST(Startup, PhotoBatchesGoWhereTheyWereMeasuredToFinishFirst) {
  const auto photos = [](double n) { return WorkEstimate{n * 12e6, 3, 22, n * 12e6, true}; };
  // 4xH200, 64 cores, the driver starting only the GPUs taken, whole process: 200 photos took 0.91-0.97 s on
  // the CPU alone, 1.89-2.01 s on one GPU; 500 2.13-2.30 s against 2.43-2.44 s.
  EXPECT_TRUE(choose_cpu_for_small_work(photos(200), 64, 4).cpu_only);
  const StartupChoice five_hundred = choose_cpu_for_small_work(photos(500), 64, 4);
  EXPECT_TRUE(five_hundred.cpu_only) << five_hundred.reason;
  // 1000: 4.33-4.44 s on the CPU alone, 3.06-3.28 s on GPUs 0 and 1 (3.16-3.30 s on one).
  const StartupChoice thousand = choose_cpu_for_small_work(photos(1000), 64, 4);
  EXPECT_FALSE(thousand.cpu_only) << thousand.reason;
  EXPECT_LT(thousand.gpu_s, thousand.cpu_s);
  // 2xH100, 32 cores: 200 photos 2.39-2.65 s on the CPU, 2.58-2.87 s with the GPUs; 1000 go to them.
  EXPECT_TRUE(choose_cpu_for_small_work(photos(200), 32, 2).cpu_only);
  EXPECT_FALSE(choose_cpu_for_small_work(photos(1000), 32, 2).cpu_only);
  EXPECT_TRUE(choose_cpu_for_small_work(photos(8), 64, 4).cpu_only);
}

// How many GPUs a photo batch takes (docs/performance.md, "Photo batch"): 4000x3000 photos, sigma 1.5, 64 cores.
TEST(Startup, PhotoBatchesTakeAsManyGpusAsEndThemSoonest) {
  const auto photos = [](double n) { return WorkEstimate{n * 12e6, 3, 22, n * 12e6, true}; };
  // 4xH200 (2026-11-28, whole process): 2000 photos 3.76-3.96 s on GPUs 0 and 1, 4.49-4.64 s on all four; on
  // another host 3.84-4.01 s on two, 4.21-4.28 s on three.
  const StartupChoice two = choose_cpu_for_small_work(photos(2000), 64, 4);
  EXPECT_FALSE(two.cpu_only);
  EXPECT_EQ(two.gpus, 2) << two.reason;
  EXPECT_LT(two.gpu_s, two.all_gpus_s);
  EXPECT_NE(two.reason.find("2 of the 4 GPUs"), std::string::npos) << two.reason;
  // 10 000 photos take all four (8.04-8.89 s; 8.67-8.83 s on three).
  const StartupChoice four = choose_cpu_for_small_work(photos(10000), 64, 4);
  EXPECT_EQ(four.gpus, 4) << four.reason;
  EXPECT_DOUBLE_EQ(four.gpu_s, four.all_gpus_s);
  // More work never takes fewer GPUs, and one GPU is all one GPU can take.
  int last = 1;
  for (double n : {500.0, 1000.0, 2000.0, 4000.0, 6000.0, 10000.0, 40000.0}) {
    const StartupChoice c = choose_cpu_for_small_work(photos(n), 64, 4);
    if (c.cpu_only) continue;
    EXPECT_GE(c.gpus, last) << n << " photos: " << c.reason;
    last = c.gpus;
  }
  EXPECT_EQ(last, 4);
  EXPECT_EQ(choose_cpu_for_small_work(photos(2000), 64, 1).gpus, 1);
  // Nothing to do (every file already done): the CPU, with numbers, not NaNs, in its reason.
  const StartupChoice none = choose_cpu_for_small_work(photos(0), 64, 4);
  EXPECT_TRUE(none.cpu_only);
  EXPECT_EQ(none.reason.find("nan"), std::string::npos) << none.reason;
  // Without the GPU codecs (TIFFs, PNGs) every GPU filters: none of them joins late.
  WorkEstimate tiffs = photos(2000);
  tiffs.gpu_codecs = false;
  EXPECT_EQ(choose_cpu_for_small_work(tiffs, 64, 4).gpus, 4);
}

TEST(Startup, StepsAreRecordedInProcessSeconds) {
  const double t0 = process_seconds();
  EXPECT_GE(t0, 0);
  {
    StartupTimer timer("test step");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double t1 = process_seconds();
  EXPECT_GT(t1, t0);
  bool found = false;
  for (const auto& s : startup_steps())
    if (s.what == "test step") {
      found = true;
      EXPECT_GE(s.t0, t0);
      EXPECT_LE(s.t1, t1);
      EXPECT_GE(s.t1 - s.t0, 0.004);
    }
  EXPECT_TRUE(found);
  EXPECT_GE(gpus_visible_without_cuda(), 0);
}

TEST(Startup, VerboseApplyPrintsTheStepsAndTheChoice) {
  test::TempDir dir;
  const std::string in = dir / "in.png", out = dir / "out.png";
  ASSERT_EQ(test::run_cli(fmt::format("generate {} --size 97x61", in)), 0);
  std::string log;
  ASSERT_EQ(test::run_cli(fmt::format("apply {} {} -f gaussian:sigma=1.5 -q --verbose", in, out), &log), 0) << log;
  EXPECT_NE(log.find("[startup]"), std::string::npos) << log;
  EXPECT_NE(log.find("now"), std::string::npos) << log;
}

TEST(Startup, CpuWorkersFollowTheCoresTheProcessMayUse) {
  // A cap (an MPI rank's share of its node) lowers every default count, and lifts again.
  const int cores = default_threads();
  limit_default_threads(1);
  EXPECT_EQ(default_threads(), 1);
  EXPECT_EQ(select_devices("cpu").devices.size(), 1u);
  limit_default_threads(0);
  EXPECT_EQ(default_threads(), cores);
  // A process bound to one core (taskset, a launcher's binding) makes one CPU worker, not one a
  // hardware thread of the machine.
  if (std::thread::hardware_concurrency() < 2 || std::system("taskset -c 0 true > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "needs 2 cores and taskset";
  const std::string cmd = fmt::format("taskset -c 0 '{}' devices --devices cpu 2>&1", TF_CLI_PATH);
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) text += buf.data();
  ASSERT_EQ(::pclose(p), 0) << text;
  EXPECT_NE(text.find("1 of them usable by this process"), std::string::npos) << text;
  EXPECT_NE(text.find("--devices cpu uses: cpu0\n"), std::string::npos) << text;
}

// NVML may list the GPUs for CUDA only where CUDA_VISIBLE_DEVICES keeps the first ones in order.
TEST(Startup, OnlyTheFirstGpusInOrderKeepTheirOrdinals) {
  EXPECT_EQ(first_gpus_kept("0"), 1);
  EXPECT_EQ(first_gpus_kept("0,1"), 2);
  EXPECT_EQ(first_gpus_kept(visible_gpus_for({3, 0, 2, 1})), 4);
  EXPECT_EQ(first_gpus_kept(visible_gpus_for({3})), -1);  // GPU 3 alone: CUDA's GPU 0
  for (const char* other : {"", "1", "0,2", "1,0", "0,1,", "00", " 0", "GPU-0e6584fc", "MIG-1"})
    EXPECT_EQ(first_gpus_kept(other), -1) << '"' << other << '"';
}

// The CLI's jobs start the driver on the GPUs named alone, and only where the process allowed it, before the
// driver's first start, and the user set no CUDA_VISIBLE_DEVICES. CUDA numbers them in the order of their
// ordinals (the backend shows each by its own).
TEST(Startup, OnlyTheNamedGpusAreMadeVisibleWhereAllowed) {
  EXPECT_EQ(visible_gpus_for({}), "");
  EXPECT_EQ(visible_gpus_for({0}), "0");
  EXPECT_EQ(visible_gpus_for({1, 0}), "0,1");
  EXPECT_EQ(visible_gpus_for({2}), "2");
  EXPECT_EQ(visible_gpus_for({3, 2, 3}), "2,3");
  EXPECT_EQ(gpus_made_visible({3, 1, 3}), (std::vector<int>{1, 3}));  // CUDA's 0 and 1
  const char* before = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string kept = before ? before : "";
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_FALSE(narrow_visible_gpus({0, 1}));  // not allowed: a library's process
  EXPECT_EQ(std::getenv("CUDA_VISIBLE_DEVICES"), nullptr);
  start_only_named_gpus();
  EXPECT_FALSE(narrow_visible_gpus({}));  // every GPU: nothing to narrow, and the one chance is gone
  EXPECT_FALSE(narrow_visible_gpus({0}));
  EXPECT_EQ(std::getenv("CUDA_VISIBLE_DEVICES"), nullptr);
  ::setenv("CUDA_VISIBLE_DEVICES", "3", 1);
  start_only_named_gpus();
  EXPECT_FALSE(narrow_visible_gpus({0}));  // the user's choice stands
  EXPECT_STREQ(std::getenv("CUDA_VISIBLE_DEVICES"), "3");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  start_only_named_gpus();
  EXPECT_TRUE(narrow_visible_gpus({1}));
  EXPECT_STREQ(std::getenv("CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_TRUE(visible_gpus_narrowed());
  EXPECT_LE(gpus_visible_without_cuda(), 1);
  if (before) ::setenv("CUDA_VISIBLE_DEVICES", kept.c_str(), 1);
  else ::unsetenv("CUDA_VISIBLE_DEVICES");
}

}  // namespace
}  // namespace tf
