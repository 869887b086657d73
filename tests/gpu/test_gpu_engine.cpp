// The multi-GPU engine around the kernels: the device-memory cap, fault injection and retries,
// the CPU fallback, pinned and pageable images, telemetry, device-resident runs, discovery.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gpu_test_support.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::gputest {
namespace {

TEST(GpuEngine, DevicesDescribeThemselves) {
  TF_REQUIRE_GPU();
  for (const auto& g : gpus()) {
    const DeviceInfo& i = g->info();
    EXPECT_EQ(i.kind, DeviceKind::Cuda);
    EXPECT_EQ(i.id, fmt::format("gpu{}", i.ordinal));
    EXPECT_FALSE(i.name.empty());
    EXPECT_GT(i.multiprocessors, 0);
    EXPECT_GT(i.memory_total, std::size_t{1} << 30);
    EXPECT_GE(g->lanes(), 1);
    const auto s = g->sample();
    ASSERT_TRUE(s.has_value());
    EXPECT_GT(s->memory_total, 0u);
    EXPECT_LE(s->utilization, 100.0);
    std::printf("%s: %s, %d SMs, %.1f GiB, link '%s', utilization %.0f%%\n", i.id.c_str(), i.name.c_str(),
                i.multiprocessors, i.memory_total / 1073741824.0, i.link.c_str(), s->utilization);
  }
}

// An image larger than the memory the GPU may use streams through it tile by tile.
TEST(GpuEngine, DeviceMemoryCapStreamsABiggerImage) {
  TF_REQUIRE_GPU();
  const std::size_t cap = 48ULL << 20;
  const DeviceSelection sel = select_devices("0", cap);
  const Image src = test::random_image(4096, 4096, {PixelType::U8, 4}, test::test_seed(3));  // 64 MiB in, 64 out
  ASSERT_GT(src.size_bytes(), cap);
  const Chain chain = parse_chain({"gaussian:sigma=1.33,radius=4", "sharpen"});
  JobOptions o;
  JobReport report;
  const Image out = run_on(src, chain, sel.devices, o, &report);
  EXPECT_TRUE(same_bits(cpu_reference(src, chain, o.border), out));
  EXPECT_GT(report.tiles, 4);
  EXPECT_TRUE(report.failures.empty());
  EXPECT_EQ(report.tiles_per_device[0], report.tiles);
  EXPECT_GT(cuda::reserved_bytes(*sel.devices[0]), 0u);
  EXPECT_LE(cuda::reserved_bytes(*sel.devices[0]), cap);
  std::printf("cap %zu MiB: %d tiles of %dx%d, %zu MiB of device buffers\n", cap >> 20, report.tiles, report.tile.width,
              report.tile.height, cuda::reserved_bytes(*sel.devices[0]) >> 20);
}

// PCIe-bound chains get full-width strips, compute-bound ones square tiles (measurements in
// kernels/src/cuda_device.cpp); either way the bits are the CPU's.
TEST(GpuEngine, TileShapeFollowsTheWorkload) {
  TF_REQUIRE_GPU();
  const auto one = first_gpus(1);
  const Image src = test::random_image(4096, 2048, {PixelType::U8, 4}, test::test_seed(5));
  JobOptions o;
  JobReport strips, squares;
  const Chain light = parse_chain({"gaussian:sigma=1.33,radius=4"});
  EXPECT_TRUE(same_bits(cpu_reference(src, light, o.border), run_on(src, light, one, o, &strips)));
  EXPECT_EQ(strips.tile.width, 4096);
  EXPECT_LE(strips.tile.height, 512);
  const Chain heavy = parse_chain({"unsharp:sigma=5"});  // 2-D 31x31: 961 FMAs a pixel
  run_on(src, heavy, one, o, &squares);
  EXPECT_EQ(squares.tile.width, squares.tile.height);
  std::printf("9 taps: %d tiles of %dx%d; 2-D 31x31: %d tiles of %dx%d\n", strips.tiles, strips.tile.width,
              strips.tile.height, squares.tiles, squares.tile.width, squares.tile.height);
}

// A tile the budget cannot hold fails on the GPU (a typed error, no crash) and the CPU does it.
TEST(GpuEngine, TileOverTheBudgetFallsBackToTheCpu) {
  TF_REQUIRE_GPU();
  const DeviceSelection sel = select_devices("0", 8ULL << 20);
  const Image src = test::random_image(1500, 1500, {PixelType::U8, 4}, test::test_seed(4));
  const Chain chain = parse_chain({"box:radius=2"});
  JobOptions o;
  o.schedule.tile = {1500, 1500};
  JobReport report;
  const Image out = run_on(src, chain, sel.devices, o, &report);
  EXPECT_TRUE(same_bits(cpu_reference(src, chain, o.border), out));
  ASSERT_FALSE(report.failures.empty());
  EXPECT_NE(report.failures[0].message.find("MiB"), std::string::npos) << report.failures[0].message;
  EXPECT_EQ(report.tiles_per_device.back(), 1);  // the CPU fallback did it
}

// Injected faults: every failed tile is retried on the other GPU, then the CPU; same bits.
TEST(GpuEngine, FaultInjectionRetriesGiveIdenticalOutput) {
  TF_REQUIRE_GPU();
  const auto devices = first_gpus(2);
  const Image src = test::random_image(1999, 1003, {PixelType::U16, 3}, test::test_seed(8));
  const Chain chain = parse_chain({"gaussian:sigma=2", "sobel:dir=magnitude"});
  const Image expected = cpu_reference(src, chain, {});
  for (double rate : {0.3, 1.0}) {
    JobOptions o;
    o.faults.rate = rate;
    o.faults.seed = 42;
    o.schedule.tile = {256, 256};
    JobReport report;
    const Image out = run_on(src, chain, devices, o, &report);
    EXPECT_TRUE(same_bits(expected, out)) << "fault rate " << rate;
    EXPECT_FALSE(report.failures.empty());
    for (const auto& f : report.failures) EXPECT_NE(f.message.find("injected fault"), std::string::npos) << f.message;
    int done = 0;
    for (int n : report.tiles_per_device) done += n;
    EXPECT_EQ(done, report.tiles);
    if (rate == 1.0) EXPECT_EQ(report.tiles_per_device.back(), report.tiles);  // all on the CPU fallback
    else EXPECT_LT(report.tiles_per_device.back(), report.tiles);
  }
}

// GPUs and CPU workers pull from one queue; the output does not depend on who did what.
TEST(GpuEngine, GpusAndCpuWorkersShareTheQueue) {
  TF_REQUIRE_GPU();
  const DeviceSelection sel = select_devices("0,cpu:2");
  ASSERT_EQ(sel.devices.size(), 3u);
  const Image src = test::random_image(1500, 900, {PixelType::F32, 4}, test::test_seed(9));
  const Chain chain = parse_chain({"unsharp:sigma=1.3"});
  JobOptions o;
  o.schedule.tile = {128, 128};
  JobReport report;
  EXPECT_TRUE(same_bits(cpu_reference(src, chain, o.border), run_on(src, chain, sel.devices, o, &report)));
  EXPECT_GT(report.tiles_per_device[0], 0);
}

// Pinned images go straight to and from the GPU; pageable ones through pinned staging. Same bits.
TEST(GpuEngine, PinnedAndPageableImages) {
  TF_REQUIRE_GPU();
  const PixelAllocator* pinned = cuda::pinned_allocator();
  ASSERT_NE(pinned, nullptr);
  const Image pageable = test::random_image(3001, 1777, {PixelType::U8, 3}, test::test_seed(10));
  const Image src = pinned_copy(pageable);
  const Chain chain = parse_chain({"gaussian:sigma=1.5"});
  Image dst(src.width(), src.height(), src.format(), *pinned);
  JobOptions o;
  run_filter(src.view(), dst.view(), chain, gpus(), o);
  const Image expected = cpu_reference(pageable, chain, o.border);
  EXPECT_TRUE(same_bits(expected, dst));
  EXPECT_TRUE(same_bits(expected, run_on(pageable, chain, gpus(), o)));
}

// A lane that takes the strip right below its last one uploads only the rows past the last one's
// (the strips scroll down its upload buffer), and one that takes the strip right below another
// lane's copies the rows they share from that lane on the GPU (design.md, threading model). Odd
// strip heights, some shorter than the halo, one lane (which wraps around its buffer) and several,
// one GPU and two, strips as wide as the image and half as wide, pinned and pageable images, every
// border mode (wrap's edge strips upload two runs of rows and take none): the CPU's bits, and each
// source row crosses the link about once.
TEST(GpuEngine, StripsBelowEachOtherUploadOnlyTheirNewRows) {
  TF_REQUIRE_GPU();
  ASSERT_NE(cuda::pinned_allocator(), nullptr);
  const Image pageable = test::random_image(1001, 1531, {PixelType::U8, 4}, test::test_seed(13));
  const Image in_pinned = pinned_copy(pageable);
  const std::size_t image_bytes = pageable.view().row_bytes() * pageable.height();
  for (const auto& specs : {std::vector<std::string>{"gaussian:sigma=1.5"},
                            std::vector<std::string>{"gaussian:sigma=3", "unsharp:sigma=1"}}) {
    const Chain chain = parse_chain(specs);
    const std::string spec = fmt::format("{}", fmt::join(specs, " + "));
    const int halo = chain_halo(chain).top + chain_halo(chain).bottom;
    const int halo_x = chain_halo(chain).left + chain_halo(chain).right;
    for (BorderMode mode : {BorderMode::Reflect101, BorderMode::Constant, BorderMode::Wrap}) {
      const Image expected = cpu_reference(pageable, chain, {mode, 7});
      for (const auto& [strip, lanes, devices, across] :
           {std::array{37, 1, 1, 1}, std::array{5, 1, 1, 1}, std::array{61, 3, 1, 1}, std::array{64, 6, 1, 1},
            std::array{23, 4, 2, 1}, std::array{40, 3, 2, 2}}) {
        for (const Image* src : {&pageable, &in_pinned}) {
          JobOptions o;
          o.border = {mode, 7};
          o.schedule.tile = {(pageable.width() + across - 1) / across, strip};
          o.schedule.streams_per_device = lanes;
          JobReport report;
          const auto on = first_gpus(devices);
          const Image out = run_on(*src, chain, on, o, &report);
          const std::string what =
              fmt::format("{} {} strips of {} rows, {} across, {} lane(s) on {} GPU(s), {}", spec, to_string(mode),
                          strip, across, lanes, on.size(), src == &pageable ? "pageable" : "pinned");
          EXPECT_TRUE(same_bits(expected, out)) << what;
          if (mode == BorderMode::Wrap || report.passes != 1) continue;
          std::size_t uploaded = 0;
          for (const auto& r : report.records)
            if (r.stage == StageKind::Upload) uploaded += r.bytes;
          // Every row once, plus the halo of a strip at each wrap of a lane's buffer, at each band a
          // device starts and where one lane queued its upload before the lane with the strip above
          // it (one lane on one GPU: two bands at most, as before lanes shared rows); the halo
          // columns of strips narrower than the image; the maps.
          const std::size_t row_bytes = image_bytes / pageable.height();
          const std::size_t column_bytes = image_bytes / pageable.width();
          const int bands = lanes == 1 && on.size() == 1 ? 2 : 4;
          EXPECT_GE(uploaded, image_bytes) << what;
          EXPECT_LT(uploaded, image_bytes + column_bytes * halo_x * (across - 1) +
                                  row_bytes * halo * (report.tiles / 4 + bands) + report.tiles * 64 * 1024)
              << what << ": " << report.tiles << " tiles, " << uploaded - image_bytes << " bytes more than the image";
        }
      }
    }
  }
}

// Strips far shorter than the halo: a strip's rows are mostly the strip above's, which came to that
// lane by a carry from the lane before it, on that lane's stream. The copy out of them must wait
// for that carry too (until 2026-11-26 it waited only for the upload stream: a sigma-150 job on one
// H200 gave wrong bits in 13 runs of 16). Several jobs of 16-row strips under 120 halo rows on six
// lanes, one GPU and two: the CPU's bits every time.
TEST(GpuEngine, CarriesOfCarriedRowsWaitForTheFirstCarry) {
  TF_REQUIRE_GPU();
  const Image src = test::random_image(640, 900, {PixelType::U8, 4}, test::test_seed(15));
  const Chain chain = parse_chain({"gaussian:sigma=20"});
  ASSERT_GE(chain_halo(chain).top, 60);
  for (BorderMode mode : {BorderMode::Reflect101, BorderMode::Replicate}) {
    const Image expected = cpu_reference(src, chain, {mode});
    for (int devices : {1, 2}) {
      JobOptions o;
      o.border = {mode};
      o.schedule.tile = {src.width(), 16};
      o.schedule.streams_per_device = 6;
      const auto on = first_gpus(devices);
      for (int job = 0; job < 5; ++job)
        EXPECT_TRUE(same_bits(expected, run_on(src, chain, on, o)))
            << to_string(mode) << ", " << on.size() << " GPU(s), job " << job;
    }
  }
}

// A lane sends a tile's maps only when the ones its last tile left on the device differ (the inner
// strips of a band share theirs). Jobs one after the other on the same lanes whose maps have the
// same size but not the same entries (reflect101 and reflect mirror about different rows and
// columns; replicate repeats the edge), the edge strips of each job differing from its inner ones:
// each job gets the CPU's bits.
TEST(GpuEngine, LanesSendMapsThatDifferFromTheirLastTiles) {
  TF_REQUIRE_GPU();
  const Image src = test::random_image(777, 403, {PixelType::U8, 4}, test::test_seed(14));
  const Chain chain = parse_chain({"gaussian:sigma=2"});
  for (BorderMode mode : {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Reflect101}) {
    for (const int lanes : {1, 2}) {
      JobOptions o;
      o.border = {mode, 0};
      o.schedule.tile = {src.width(), 29};
      o.schedule.streams_per_device = lanes;
      EXPECT_TRUE(same_bits(cpu_reference(src, chain, o.border), run_on(src, chain, first_gpus(1), o)))
          << to_string(mode) << ", " << lanes << " lane(s)";
    }
  }
}

// Telemetry: upload, kernel and download records per tile, on the job's clock, within its wall time,
// the copies taking time in the second job too (a copy's start comes from the copy before it, which
// may be the last job's).
TEST(GpuEngine, TelemetryRecordsEveryStage) {
  TF_REQUIRE_GPU();
  const Image src = test::random_image(2048, 2048, {PixelType::U8, 4}, test::test_seed(11));
  JobOptions o;
  o.schedule.tile = {512, 512};
  o.schedule.streams_per_device = 3;
  for (int job = 0; job < 2; ++job) {
    SCOPED_TRACE(job);
    JobReport report;
    run_on(src, parse_chain({"box:radius=4"}), first_gpus(1), o, &report);
    std::vector<int> per_stage(3, 0);
    std::vector<int> lanes;
    for (const auto& r : report.records) {
      ASSERT_GE(r.t1, r.t0);
      EXPECT_GE(r.t0, -1e-3);
      EXPECT_LE(r.t1, report.wall_s + 1e-3);
      EXPECT_EQ(r.device, 0);
      if (r.stage == StageKind::Upload) ++per_stage[0];
      if (r.stage == StageKind::Kernel) ++per_stage[1];
      if (r.stage == StageKind::Download) ++per_stage[2];
      if (std::find(lanes.begin(), lanes.end(), r.lane) == lanes.end()) lanes.push_back(r.lane);
    }
    EXPECT_EQ(per_stage, (std::vector<int>{report.tiles, report.tiles, report.tiles}));
    EXPECT_GE(lanes.size(), 2u) << "tiles should spread over the streams";
    const auto split = summarize(report.records, report.device_names, report.wall_s);
    EXPECT_GT(split[0].kernel_s, 0);
    EXPECT_GT(split[0].upload_s, 0);
    EXPECT_GT(split[0].download_s, 0);
    EXPECT_EQ(split[0].bytes_down, src.view().row_bytes() * src.height());
  }
}

// The benchmark's device-resident path computes the same bits as the host-resident one.
TEST(GpuEngine, DeviceResidentRunMatchesTheCpu) {
  TF_REQUIRE_GPU();
  const Image src = test::random_image(1531, 1023, {PixelType::U8, 4}, test::test_seed(12));
  for (const char* spec : {"gaussian:sigma=1.33,radius=4", "unsharp:sigma=1.3"}) {
    const Chain chain = parse_chain({spec});
    const Image expected = cpu_reference(src, chain, {});
    std::vector<int> ordinals;
    for (const auto& g : gpus()) ordinals.push_back(g->info().ordinal);
    for (std::size_t n = 1; n <= std::min<std::size_t>(2, ordinals.size()); ++n) {
      Image out(src.width(), src.height(), src.format());
      const auto t =
          cuda::bench_device_resident(src.view(), chain, {}, {ordinals.begin(), ordinals.begin() + n}, 3, &out.view());
      EXPECT_TRUE(same_bits(expected, out)) << spec << " on " << n << " GPU(s)";
      EXPECT_EQ(t.seconds.size(), 3u);
      EXPECT_GT(t.gigapixels_per_s, 0);
      // The ceilings of the GPUs that ran it: a copy rate and an FMA rate that no GPU of today reaches
      // tenfold, and the share of the nearer one.
      EXPECT_GT(t.roofline.copy_gbs, 10.0 * n);
      EXPECT_LT(t.roofline.copy_gbs, 100e3 * n);
      EXPECT_GT(t.roofline.fmas_per_s, 1e12 * n);
      EXPECT_LT(t.roofline.fmas_per_s, 1e15 * n);
      EXPECT_NEAR(t.roofline.share, t.gigapixels_per_s / std::min(t.roofline.memory_gpix, t.roofline.fma_gpix),
                  1e-9 * t.roofline.share);
    }
  }
}

#ifdef TF_HAVE_CUDA
// The roofline's arithmetic (runs without a GPU): 8192^2 RGBA8 on an H100 SXM's figures (132
// multiprocessors x 128 lanes x 1.98 GHz, a 2973 GB/s device copy), as issue 44 wrote them.
TEST(ResidentRoofline, BytesFmasAndTheNearerCeiling) {
  const double copy_gbs = 2973, fmas_per_s = 132.0 * 128 * 1.98e9;
  const Format rgba8{PixelType::U8, 4};
  auto roof = [&](std::vector<std::string> specs, double gpix, Format f) {
    return cuda::make_roofline(parse_chain(specs), f, copy_gbs, fmas_per_s, gpix);
  };
  const cuda::Roofline sep9 = roof({"gaussian:sigma=1.33,radius=4"}, 165.5, rgba8);
  EXPECT_EQ(sep9.bytes_per_pixel, 8);
  EXPECT_EQ(sep9.fmas_per_pixel, 18 * 4);
  EXPECT_NEAR(sep9.memory_gpix, 371.6, 0.1);
  EXPECT_NEAR(sep9.fma_gpix, 464.6, 0.1);
  EXPECT_EQ(sep9.bound, "memory");
  EXPECT_NEAR(sep9.share, 165.5 / 371.625, 1e-9);
  const cuda::Roofline sep31 = roof({"gaussian:sigma=5,radius=15"}, 65.3, rgba8);
  EXPECT_EQ(sep31.fmas_per_pixel, 62 * 4);
  EXPECT_EQ(sep31.bound, "FMA");
  EXPECT_NEAR(sep31.fma_gpix, 134.9, 0.1);
  EXPECT_EQ(roof({"unsharp:sigma=1.3"}, 60.1, rgba8).fmas_per_pixel, 81 * 4);
  EXPECT_NEAR(roof({"unsharp:sigma=5"}, 6.56, rgba8).fma_gpix, 8.70, 0.01);
  // Three channels take three FMAs a tap; every stage of a chain reads and writes its pixels.
  const cuda::Roofline chain = roof({"gaussian:sigma=1.33,radius=4", "sharpen"}, 10, {PixelType::U16, 3});
  EXPECT_EQ(chain.bytes_per_pixel, 2 * 2 * 6);
  EXPECT_EQ(chain.fmas_per_pixel, (18 + 9) * 3);
  // Box sums on integers take no FMAs (memory bound); on floats the separable FMAs.
  const cuda::Roofline box = roof({"box:radius=130"}, 10, rgba8);
  EXPECT_EQ(box.fmas_per_pixel, 0);
  EXPECT_EQ(box.fma_gpix, 0);
  EXPECT_EQ(box.bound, "memory");
  EXPECT_EQ(roof({"box:radius=130"}, 10, {PixelType::F32, 1}).fmas_per_pixel, 2 * 261);
  EXPECT_EQ(cuda::fp32_lanes_per_multiprocessor(9, 0), 128);
  EXPECT_EQ(cuda::fp32_lanes_per_multiprocessor(8, 0), 64);
  EXPECT_EQ(cuda::fp32_lanes_per_multiprocessor(8, 9), 128);
  EXPECT_EQ(cuda::fp32_lanes_per_multiprocessor(7, 0), 64);
}
#endif

TEST(GpuEngine, RuntimeDescription) {
  const std::string d = cuda::runtime_description();
  EXPECT_NE(d.find("CUDA"), std::string::npos) << d;
}

}  // namespace
}  // namespace tf::gputest

namespace tf::gputest {
namespace {

// A small, fast subset that still reaches every kernel path (separable and 2-D, chunked 2-D rows,
// magnitude epilogue, mapped border blocks and shifted interior blocks, chains, device-resident):
// the one to run under compute-sanitizer (memcheck, racecheck).
TEST(GpuSanitizerSubset, KernelsOnSmallImages) {
  TF_REQUIRE_GPU();
  const std::uint32_t seed = test::test_seed(21);
  const std::vector<std::vector<std::string>> chains = {{"box:radius=4"},
                                                        {"gaussian:sigma=5,radius=15"},
                                                        {"unsharp:sigma=1.3"},
                                                        {"sobel:dir=magnitude"},
                                                        {"gaussian:sigma=1", "sharpen"}};
  const Format formats[] = {{PixelType::U8, 4}, {PixelType::F32, 1}, {PixelType::U16, 3}};
  int n = 0;
  for (const auto& specs : chains) {
    const Chain chain = parse_chain(specs);
    for (const Format& f : formats)
      for (BorderMode mode : {BorderMode::Reflect101, BorderMode::Constant, BorderMode::Wrap}) {
        const Image src = test::random_image(130, 90, f, seed + n++);
        JobOptions o;
        o.border = {mode, 3.0f};
        const Image expected = cpu_reference(src, chain, o.border);
        const auto t0 = std::chrono::steady_clock::now();
        ASSERT_TRUE(same_bits(expected, run_on(src, chain, first_gpus(2), o))) << specs[0] << " " << to_string(f);
        o.schedule.tile = {48, 40};
        ASSERT_TRUE(same_bits(expected, run_on(src, chain, first_gpus(1), o))) << specs[0] << " " << to_string(f);
        // Under compute-sanitizer this shows where the time goes.
        std::printf("[subset] %s %s %s: %.0f ms\n", specs[0].c_str(), to_string(f).c_str(), to_string(mode).c_str(),
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        std::fflush(stdout);
      }
  }
  const Image src = test::random_image(100, 70, {PixelType::U8, 4}, seed);
  const Chain wide = {random_kernel_stage(63, 63, 3)};
  JobOptions exact;
  exact.exact = true;  // the direct path's 2-D kernel (not cuFFT: tests/gpu/test_gpu_fft.cpp)
  EXPECT_TRUE(same_bits(cpu_reference(src, wide, {}), run_on(src, wide, first_gpus(1), exact)));
  Image out(src.width(), src.height(), src.format());
  cuda::bench_device_resident(src.view(), parse_chain({"box:radius=4"}), {}, {gpus()[0]->info().ordinal}, 1,
                              &out.view());
  EXPECT_TRUE(same_bits(cpu_reference(src, parse_chain({"box:radius=4"}), {}), out));
}

}  // namespace
}  // namespace tf::gputest
