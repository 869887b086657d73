// Bitwise equality where the contract promises it: tiled = untiled for any tile size, cpu:1 = cpu:4,
// a chain = its filters applied one by one, unequal devices and failing devices change nothing.
#include <array>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "test_support.hpp"
#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/util/error.hpp"

namespace tf {
namespace {

std::vector<DevicePtr> cpus(int n) { return select_devices(fmt::format("cpu:{}", n)).devices; }

Image run(const Image& src, const Chain& chain, const std::vector<DevicePtr>& devices, Border border, int tile = 0,
          JobReport* report = nullptr) {
  JobOptions opt;
  opt.border = border;
  opt.schedule.tile = {tile, tile};
  return filter_image(src, chain, devices, opt, report);
}

// The untiled reference: one tile covering the whole image, one worker.
Image untiled(const Image& src, const Chain& chain, Border border) {
  return run(src, chain, cpus(1), border, std::max(src.width(), src.height()));
}

std::string asymmetric_kernel_file() {
  const auto path = (std::filesystem::temp_directory_path() / "tf-eq-kernel.txt").string();
  std::ofstream(path) << "0.1 0.2 -0.3 0.05\n0.4 -0.1 0.2 0.3\n# even-sized, off-centre anchor\n";
  return path;
}

const BorderMode kModes[] = {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Constant,
                             BorderMode::Wrap};

TEST(Equivalence, TiledEqualsUntiledForEverySizeTileBorderAndType) {
  const Chain chain = parse_chain({"gaussian:sigma=1.3", "custom:file=" + asymmetric_kernel_file(), "sobel"});
  const std::pair<int, int> sizes[] = {{1, 1}, {7, 3}, {4097, 33}};
  std::uint32_t seed = test::test_seed(300);
  for (auto [w, h] : sizes)
    for (auto type : {PixelType::U8, PixelType::U16, PixelType::F32})
      for (int channels : {1, 3, 4})
        for (auto mode : kModes) {
          SCOPED_TRACE(::testing::Message() << w << "x" << h << " " << to_string(Format{type, channels}) << " "
                                            << to_string(mode) << " seed " << seed);
          const Image src = test::random_image(w, h, Format{type, channels}, seed++);
          const Border border{mode, 40};
          const Image ref = untiled(src, chain, border);
          for (int tile : {16, 37, 256, 4096})
            EXPECT_TRUE(same_pixels(run(src, chain, cpus(3), border, tile).view(), ref.view())) << "tile " << tile;
        }
}

TEST(Equivalence, TiledEqualsUntiledOnAMegapixel) {
  const Chain chain = parse_chain({"unsharp:sigma=2,amount=1", "emboss"});
  std::uint32_t seed = test::test_seed(400);
  for (auto mode : {BorderMode::Reflect101, BorderMode::Wrap}) {
    SCOPED_TRACE(::testing::Message() << to_string(mode) << " seed " << seed);
    const Image src = test::random_image(1000, 1000, Format{PixelType::U8, 4}, seed++);
    const Image ref = untiled(src, chain, Border{mode});
    for (int tile : {16, 100, 512, 4096})
      EXPECT_TRUE(same_pixels(run(src, chain, cpus(4), Border{mode}, tile).view(), ref.view())) << "tile " << tile;
  }
}

TEST(Equivalence, NonSquareTiles) {
  const Chain chain = parse_chain({"box:radius=4"});
  const Image src = test::random_image(301, 203, Format{PixelType::F32, 3}, test::test_seed(5));
  const Image ref = untiled(src, chain, Border{});
  JobOptions opt;
  opt.schedule = {17, 64, 0};
  EXPECT_TRUE(same_pixels(filter_image(src, chain, cpus(2), opt).view(), ref.view()));
}

TEST(Equivalence, OneWorkerEqualsFourWorkers) {
  const Chain chain = parse_chain({"gaussian:sigma=2", "sharpen:amount=0.5"});
  const Image src = test::random_image(777, 555, Format{PixelType::U16, 3}, test::test_seed(6));
  EXPECT_TRUE(same_pixels(run(src, chain, cpus(1), Border{}).view(), run(src, chain, cpus(4), Border{}).view()));
}

TEST(Equivalence, ChainEqualsFiltersOneByOne) {
  const std::vector<std::string> specs = {"gaussian:sigma=1", "emboss", "custom:file=" + asymmetric_kernel_file(),
                                          "sobel:dir=magnitude", "box:radius=1"};
  std::uint32_t seed = test::test_seed(500);
  for (auto type : {PixelType::U8, PixelType::F32})
    for (auto mode : kModes)
      for (auto [w, h] : {std::pair{200, 150}, std::pair{9, 5}}) {
        SCOPED_TRACE(::testing::Message()
                     << to_string(mode) << " " << to_string(type) << " " << w << "x" << h << " seed " << seed);
        const Image src = test::random_image(w, h, Format{type, 3}, seed++);
        const Border border{mode, 12};
        Image step = src.clone();
        for (const auto& s : specs) step = run(step, parse_chain({s}), cpus(2), border, 64);
        JobReport report;
        const Image chained = run(src, parse_chain(specs), cpus(2), border, 64, &report);
        EXPECT_TRUE(same_pixels(chained.view(), step.view()));
        // Wrap and tiny images need the filter-by-filter fallback; the others run in one pass.
        if (mode != BorderMode::Wrap && w > 100) EXPECT_EQ(report.passes, 1);
      }
}

// The CPU worker's automatic tiles: row strips for a job it streams row by row, small squares for a
// chain, whose planes it holds (the bits are the same for any tile: the tests above).
TEST(CpuTiles, JobsThatStreamRowsTakeStripsWhoseRingFitsL2) {
  const DevicePtr cpu = cpus(1)[0];
  const Chain blur = parse_chain({"gaussian:sigma=1.5"});
  const std::size_t ring_rows = blur[0].convs[0].kernel.height + 1;  // 11 taps: 12 rows
  const Chain two_stages = parse_chain({"gaussian:sigma=1.5", "sharpen"});
  auto job_of = [](const Image& src, const Chain& chain) {
    TileJob job{};
    job.src = src.view();
    job.dst = src.view();
    job.chain = &chain;
    return job;
  };
  const Format rgba{PixelType::U8, 4};
  const Image photo(1000, 600, rgba), wide(30000, 40, rgba);
  ASSERT_TRUE(cpu::streams_rows(job_of(photo, blur)));
  ASSERT_FALSE(cpu::streams_rows(job_of(photo, two_stages)));
  // Whole rows where the ring fits: 12 rows of 1000 RGBA floats, 192 KB, within 3/4 of any L2 taken;
  // at most 256 rows high, lower for four strips a core, but not under four halos (40 rows).
  const TileSize strip = cpu->preferred_tile(job_of(photo, blur));
  EXPECT_EQ(strip.width, 1000);
  EXPECT_GE(strip.height, 40);
  EXPECT_LE(strip.height, 256);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (strip.height > 40) EXPECT_GE((600 + strip.height - 1) / strip.height, std::min(4 * cores, 3)) << strip.height;
  if (strip.height < 256) EXPECT_LE((600 + strip.height - 1) / strip.height, 4 * cores + 1) << strip.height;
  // Rows of 30000 pixels in equal parts of whole 64-pixel groups, each part's ring within 3/4 of
  // the largest L2 taken (4 MiB).
  const TileSize part = cpu->preferred_tile(job_of(wide, blur));
  const int parts = (30000 + part.width - 1) / part.width;
  EXPECT_GT(parts, 1);
  EXPECT_EQ(part.width % 64, 0);
  EXPECT_LE(ring_rows * part.width * 4 * sizeof(float), 3u << 20);
  EXPECT_LE(parts * part.width, 30000 + 64 * parts) << "the last part is about as wide as the others";
  // A chain: 192-pixel squares, whose planes stay in cache.
  EXPECT_EQ(cpu->preferred_tile(job_of(photo, two_stages)), (TileSize{192, 192}));
  // A worker streaming rows holds its ring, two output rows and a padded row, no plane of the tile.
  EXPECT_LT(cpu::worker_bytes(job_of(photo, blur), {1000, 256}), (ring_rows + 3) * 1000 * 4 * sizeof(float) + 1024);
  EXPECT_GT(cpu::worker_bytes(job_of(photo, two_stages), {1000, 256}), 1000u * 256 * 4 * sizeof(float));
}

// A device of `lanes` lanes that asks for `tile` (the reference path does the work); its lane 0
// waits `lane0_delay` before each tile.
class LanedDevice : public Device {
 public:
  LanedDevice(int lanes, TileSize tile, std::chrono::milliseconds lane0_delay = {})
      : lanes_(lanes), tile_(tile), lane0_delay_(lane0_delay) {}
  const DeviceInfo& info() const override { return cpu_->info(); }
  int lanes() const override { return lanes_; }
  TileSize preferred_tile(const TileJob&) const override { return tile_; }
  void process(const TileWork& work) override {
    if (work.lane == 0 && lane0_delay_.count() > 0) std::this_thread::sleep_for(lane0_delay_);
    cpu_->process(work);
  }

 private:
  const int lanes_;
  const TileSize tile_;
  const std::chrono::milliseconds lane0_delay_;
  DevicePtr cpu_ = cpu::make_cpu_device(0);
};

// Wide strips, 8 lanes.
TEST(Scheduler, StripsKeepWholeRowsWhenSplitForLanes) {
  const std::vector<DevicePtr> devices = {std::make_shared<LanedDevice>(8, TileSize{1024, 128})};
  const Chain chain = parse_chain({"gaussian:sigma=1.5"});
  for (const auto& [w, h, tw, th] : {std::array{1024, 2000, 1024, 128}, std::array{1024, 500, 1024, 64},
                                     std::array{1500, 300, 1024, 64}, std::array{2500, 1000, 1024, 128}}) {
    const Image src = test::random_image(w, h, Format{PixelType::U8, 3}, test::test_seed(w + h));
    JobReport report;
    const Image out = run(src, chain, devices, Border{}, 0, &report);
    EXPECT_EQ(report.tile, (TileSize{tw, th})) << w << "x" << h;
    EXPECT_GE(report.tiles, 8) << w << "x" << h;
    EXPECT_TRUE(same_pixels(out.view(), untiled(src, chain, Border{}).view())) << w << "x" << h;
  }
}

// Records which tiles each lane took, in order (the reference path does the work).
class RecordingStripDevice : public LanedDevice {
 public:
  RecordingStripDevice() : LanedDevice(4, TileSize{1024, 128}) {}
  void process(const TileWork& work) override {
    LanedDevice::process(work);
    std::lock_guard lock(mutex);
    taken[work.lane].push_back(work.tile);
  }
  std::mutex mutex;
  std::map<int, std::vector<Tile>> taken;
};

// A lane takes the strip right below its last one while it is queued (a GPU lane still holds their
// shared rows), so the lanes work down bands of the image; every tile is still done once.
TEST(Scheduler, LanesWorkDownBandsOfStrips) {
  auto device = std::make_shared<RecordingStripDevice>();
  const std::vector<DevicePtr> devices = {device};
  const Chain chain = parse_chain({"gaussian:sigma=1.5"});
  const Image src = test::random_image(1024, 64 * 128 - 77, Format{PixelType::U8, 3}, test::test_seed(17));
  JobReport report;
  const Image out = run(src, chain, devices, Border{}, 0, &report);
  EXPECT_TRUE(same_pixels(out.view(), untiled(src, chain, Border{}).view()));
  ASSERT_EQ(report.tiles, 64);
  std::vector<int> seen(64, 0);
  int below_last = 0;
  for (const auto& [lane, tiles] : device->taken)
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      ++seen.at(tiles[i].index);
      if (i > 0 && tiles[i].out.y == tiles[i - 1].out.bottom()) ++below_last;
    }
  EXPECT_EQ(seen, std::vector<int>(64, 1));
  EXPECT_GE(below_last, 32) << "of 64 strips, taken right below the same lane's last one";
}

// A device whose lanes share rows (the CUDA device copies a tile's halo rows on the GPU from the
// lane that uploaded them). Each tile waits 2 ms first, as a GPU lane waits on its copies, so that
// every lane has tiles however few cores run the test.
class SharingStripDevice : public RecordingStripDevice {
 public:
  bool lanes_share_rows() const override { return true; }
  void process(const TileWork& work) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    RecordingStripDevice::process(work);
  }
};

// Its lanes take the strip right below the last one their device took, so that each device works
// down a band with all its lanes: few strips start a band, wherever the lanes' threads run.
TEST(Scheduler, DevicesWhoseLanesShareRowsWorkDownBandsTogether) {
  auto a = std::make_shared<SharingStripDevice>();
  auto b = std::make_shared<SharingStripDevice>();
  const std::vector<DevicePtr> devices = {a, b};
  const Chain chain = parse_chain({"gaussian:sigma=1.5"});
  const Image src = test::random_image(256, 64 * 128 - 77, Format{PixelType::U8, 3}, test::test_seed(18));
  JobReport report;
  const Image out = run(src, chain, devices, Border{}, 0, &report);
  EXPECT_TRUE(same_pixels(out.view(), untiled(src, chain, Border{}).view()));
  ASSERT_EQ(report.tiles, 64);
  std::vector<int> owner(64, -1), lane_of(64, -1);
  for (int d = 0; d < 2; ++d)
    for (const auto& [lane, tiles] : (d == 0 ? a : b)->taken)
      for (const Tile& t : tiles) {
        EXPECT_EQ(owner.at(t.index), -1) << "strip " << t.index << " done twice";
        owner.at(t.index) = d;
        lane_of.at(t.index) = lane;
      }
  int starts = 0;      // strips whose strip above went to the other device (or that have none)
  int other_lane = 0;  // strips whose strip above another lane of their device did
  for (int i = 0; i < 64; ++i) {
    starts += i == 0 || owner[i] != owner[i - 1];
    other_lane += i > 0 && owner[i] == owner[i - 1] && lane_of[i] != lane_of[i - 1];
  }
  EXPECT_LE(starts, 8) << "of 64 strips, on two devices of four lanes each";
  EXPECT_GE(other_lane, 16) << "of 64 strips, right below one another lane of their device did";
  EXPECT_GE(report.tiles_per_device[0], 8);
  EXPECT_GE(report.tiles_per_device[1], 8);
}

TEST(Scheduler, SlowDeviceGetsFewerTiles) {
  std::vector<DevicePtr> devices = {cpu::make_cpu_device(0), cpu::make_cpu_device(1, 20.0)};
  const Image src = test::random_image(1024, 1024, Format{PixelType::U8, 3}, test::test_seed(7));
  const Chain chain = parse_chain({"gaussian:sigma=2"});
  JobReport report;
  const Image out = run(src, chain, devices, Border{}, 64, &report);
  EXPECT_TRUE(same_pixels(out.view(), untiled(src, chain, Border{}).view()));
  EXPECT_EQ(report.tiles, 256);
  EXPECT_GT(report.tiles_per_device[0], 3 * report.tiles_per_device[1])
      << report.tiles_per_device[0] << " vs " << report.tiles_per_device[1];
}

TEST(Scheduler, FailedTilesAreRetriedElsewhereWithIdenticalOutput) {
  const Image src = test::random_image(640, 480, Format{PixelType::U8, 4}, test::test_seed(8));
  const Chain chain = parse_chain({"unsharp:sigma=1.5,amount=2"});
  JobOptions opt;
  opt.schedule.tile = {64, 64};
  opt.faults = {0.3, true, 42};
  JobReport report;
  const Image out = filter_image(src, chain, cpus(3), opt, &report);
  EXPECT_TRUE(same_pixels(out.view(), untiled(src, chain, Border{}).view()));
  EXPECT_GT(report.failures.size(), 10u);
  int total = 0;
  for (int n : report.tiles_per_device) total += n;
  EXPECT_EQ(total, report.tiles);
}

TEST(Scheduler, EveryDeviceFailingFallsBackToTheCpu) {
  const Image src = test::random_image(300, 200, Format{PixelType::F32, 1}, test::test_seed(9));
  const Chain chain = parse_chain({"laplacian"});
  JobOptions opt;
  opt.schedule.tile = {50, 50};
  opt.faults = {1.0, true, 1};
  JobReport report;
  const Image out = filter_image(src, chain, cpus(2), opt, &report);
  EXPECT_TRUE(same_pixels(out.view(), untiled(src, chain, Border{}).view()));
  EXPECT_EQ(report.tiles_per_device.back(), report.tiles);  // all on the fallback
}

TEST(Scheduler, CancelStopsTheJob) {
  const Image src = test::random_image(2000, 2000, Format{PixelType::U8, 3}, test::test_seed(10));
  std::atomic<bool> cancel{false};
  JobOptions opt;
  opt.cancel = &cancel;
  opt.schedule.tile = {64, 64};
  opt.progress = [&](int done, int) {
    if (done == 5) cancel = true;
  };
  try {
    filter_image(src, parse_chain({"gaussian:sigma=3"}), cpus(2), opt);
    FAIL() << "expected cancellation";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Cancelled);
  }
}

// Lanes run on threads kept from one job to the next (one lane of each job on its caller's thread):
// later jobs start none, and jobs running at once from several threads each get lanes of their own,
// with unchanged outputs.
TEST(Scheduler, LaneThreadsPersistAcrossJobs) {
  const Image src = test::random_image(400, 300, Format{PixelType::U8, 3}, test::test_seed(12));
  const Chain chain = parse_chain({"gaussian:sigma=1.5"});
  const Image expected = untiled(src, chain, Border{});
  const auto devices = cpus(3);
  ASSERT_TRUE(same_pixels(run(src, chain, devices, Border{}, 64).view(), expected.view()));
  const int after_first = lane_threads();
  EXPECT_GE(after_first, 2);  // 3 lanes: 2 on pool threads
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(same_pixels(run(src, chain, devices, Border{}, 64).view(), expected.view())) << "job " << i;
  EXPECT_EQ(lane_threads(), after_first);
  std::array<Image, 3> outputs;
  std::vector<std::thread> jobs;
  for (int j = 0; j < 3; ++j) jobs.emplace_back([&, j] { outputs[j] = run(src, chain, cpus(2), Border{}, 50); });
  for (auto& t : jobs) t.join();
  for (const auto& out : outputs) EXPECT_TRUE(same_pixels(out.view(), expected.view()));
  EXPECT_LE(lane_threads(), std::max(after_first, 3));  // 3 jobs x 1 pool lane at most at once
}

// A device whose lane 0 is slow (3 ms a tile, far past the 200 us the others look before they
// sleep): the lanes that run out of tiles and the job's caller (lane 2 runs on its thread) wait
// for it asleep, and the job returns only once its every tile is written.
TEST(Scheduler, JobWaitsForItsSlowestLane) {
  const Image src = test::random_image(300, 200, Format{PixelType::U8, 4}, test::test_seed(13));
  const Chain chain = parse_chain({"gaussian:sigma=1.5"});
  const Image expected = untiled(src, chain, Border{});
  const std::vector<DevicePtr> devices = {
      std::make_shared<LanedDevice>(3, TileSize{64, 64}, std::chrono::milliseconds(3))};
  for (int job = 0; job < 3; ++job) {
    JobReport report;
    const Image out = run(src, chain, devices, Border{}, 0, &report);
    ASSERT_TRUE(same_pixels(out.view(), expected.view())) << "job " << job;
    EXPECT_EQ(report.tiles_per_device[0], report.tiles) << "job " << job;
  }
}

TEST(Scheduler, ProgressReachesTotal) {
  const Image src = test::random_image(500, 300, Format{PixelType::U8, 1}, test::test_seed(11));
  std::atomic<int> last{0}, total{0};
  JobOptions opt;
  opt.schedule.tile = {100, 100};
  opt.progress = [&](int done, int t) {
    last = std::max(last.load(), done);
    total = t;
  };
  filter_image(src, parse_chain({"box"}), cpus(2), opt);
  EXPECT_EQ(total.load(), 15);
  EXPECT_EQ(last.load(), 15);
}

}  // namespace
}  // namespace tf
