// The batch plan and its guards (what is taken, output names, never outside OUT_DIR, never over an
// input), --resume's completeness check, stale temporaries, the memory budget and buffer pool, and the
// report's note on GPUs that joined too late.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "batch_fixture.hpp"
#include "batch_internal.hpp"
#include "batch_run.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/error.hpp"

namespace fs = std::filesystem;

namespace tf::test {
namespace {

BatchOptions options_for(const std::string& in, const std::string& out) {
  BatchOptions o;
  o.input_dir = in;
  o.output_dir = out;
  return o;
}

const BatchItem* find_item(const BatchPlan& plan, const std::string& relative) {
  for (const auto& i : plan.items)
    if (i.relative == relative) return &i;
  return nullptr;
}

bool mentions(const std::vector<std::string>& list, const std::string& what) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& s) { return s.find(what) != std::string::npos; });
}

void put(const std::string& path, int w = 20, int h = 10, std::uint32_t seed = 1) {
  fs::create_directories(fs::path(path).parent_path());
  encode_file(path, random_image(w, h, Format{PixelType::U8, 3}, seed).view());
}

TEST(BatchPlan, WalkTakesImagesMirrorsTreeAndListsTheRest) {
  TempDir dir;
  const std::string in = dir / "in", out = dir / "out";
  const MixedFolder m = make_mixed_folder(in, test_seed(1));
  write_bytes(in + "/sub/.x.png.tf-123-4.tmp", {1, 2, 3});  // a temporary of some run: never an input
  fs::create_directories(dir / "elsewhere");
  put(dir / "elsewhere/z.png");
  fs::create_directory_symlink(dir / "elsewhere", in + "/linked");
  fs::create_symlink(dir / "elsewhere/z.png", in + "/via-link.png");  // a link to an image: taken
  fs::create_symlink(dir / "nowhere.png", in + "/dangling.png");

  BatchOptions o = options_for(in, out);
  BatchPlan flat = plan_batch(o);
  EXPECT_TRUE(find_item(flat, "a.png"));
  EXPECT_TRUE(find_item(flat, "via-link.png"));
  EXPECT_TRUE(mentions(flat.skipped, "dangling.png (broken symbolic link)"));
  EXPECT_FALSE(find_item(flat, "sub/d.jpg"));
  EXPECT_TRUE(mentions(flat.skipped, "sub/ (folder; add --recursive")) << "subfolders are named when not walked";

  o.recursive = true;
  const BatchPlan plan = plan_batch(o);
  EXPECT_EQ(plan.items.size(), m.images.size() + 1);
  for (const auto& rel : m.images) {
    const BatchItem* item = find_item(plan, rel);
    ASSERT_TRUE(item) << rel;
    EXPECT_EQ(fs::path(item->output).lexically_relative(fs::weakly_canonical(out)).string(), rel)
        << "same name, same format";
    EXPECT_TRUE(item->problem.empty()) << item->problem;
  }
  for (const auto& o2 : m.others) EXPECT_TRUE(mentions(plan.skipped, o2 + " (not an image)")) << o2;
  EXPECT_TRUE(mentions(plan.skipped, "linked/ (symbolic link to a folder, not followed)"));
  EXPECT_FALSE(mentions(plan.skipped, ".tmp"));
  EXPECT_FALSE(fs::exists(out)) << "planning writes nothing";
}

TEST(BatchPlan, FormatsAndNameCollisions) {
  TempDir dir;
  const std::string in = dir / "in", out = dir / "out";
  put(in + "/a.jpg", 20, 10, 1);
  put(in + "/a.png", 20, 10, 2);
  put(in + "/b.JPG", 20, 10, 3);
  // A GIF cannot be written: "same" turns it into PNG. (stb reads GIF; its bytes come from a PNG
  // here only to have a file with that extension; the plan never decodes.)
  write_bytes(in + "/c.gif", read_bytes(in + "/a.png"));
  BatchOptions o = options_for(in, out);
  BatchPlan same = plan_batch(o);
  const std::string o_root = fs::weakly_canonical(out).string();
  EXPECT_EQ(find_item(same, "b.JPG")->output, o_root + "/b.JPG");
  EXPECT_EQ(find_item(same, "c.gif")->output, o_root + "/c.png");

  o.format = "png";
  BatchPlan png = plan_batch(o);
  EXPECT_EQ(find_item(png, "a.png")->output, o_root + "/a.png") << "the input already in the format keeps the name";
  EXPECT_EQ(find_item(png, "a.jpg")->output, o_root + "/a.jpg.png");
  EXPECT_EQ(find_item(png, "b.JPG")->output, o_root + "/b.png");
  std::set<std::string> outputs;
  for (const auto& i : png.items) EXPECT_TRUE(outputs.insert(i.output).second) << "two inputs share " << i.output;

  o.format = "jpg";
  EXPECT_EQ(find_item(plan_batch(o), "a.png")->output, o_root + "/a.png.jpg");
  o.format = "webp";
  EXPECT_THROW(plan_batch(o), Error);
}

TEST(BatchPlan, RefusesOutputInsideInputWhenRecursiveUnlessExcluded) {
  TempDir dir;
  const std::string in = dir / "in";
  put(in + "/a.png");
  put(in + "/sub/b.png");
  BatchOptions o = options_for(in, in);
  EXPECT_THROW(plan_batch(o), Error) << "OUT_DIR = IN_DIR";
  o.output_dir = in + "/../in/";  // the same folder spelled differently
  EXPECT_THROW(plan_batch(o), Error);

  o.output_dir = in + "/out";
  EXPECT_NO_THROW(plan_batch(o)) << "not recursive: the output folder is never walked";
  o.recursive = true;
  EXPECT_THROW(plan_batch(o), Error);
  o.exclude = {in + "/out"};
  put(in + "/out/old.png");  // what an earlier run left there is not taken as input
  const BatchPlan plan = plan_batch(o);
  EXPECT_EQ(plan.items.size(), 2u);
  EXPECT_FALSE(find_item(plan, "out/old.png"));
  o.exclude = {in};  // excluding a parent of OUT_DIR also counts
  EXPECT_NO_THROW(plan_batch(o));
}

TEST(BatchPlan, NeverOverwritesAnInputNorWritesThroughALinkOutOfOutDir) {
  TempDir dir;
  // IN_DIR inside OUT_DIR: out/raw/raw/a.png would be written to out/raw/a.png, an input.
  const std::string out = dir / "out", in = out + "/raw";
  put(in + "/a.png", 20, 10, 1);
  put(in + "/raw/a.png", 20, 10, 2);
  put(in + "/other/b.png", 20, 10, 3);
  fs::create_directories(dir / "outside");
  // out/other is a link out of OUT_DIR: writing out/other/b.png would land in outside/.
  fs::create_directory_symlink(dir / "outside", out + "/other");
  BatchOptions o = options_for(in, out);
  o.recursive = true;
  o.exclude = {};
  const BatchPlan plan = plan_batch(o);
  EXPECT_NE(find_item(plan, "raw/a.png")->problem.find("overwrite an input"), std::string::npos);
  EXPECT_NE(find_item(plan, "other/b.png")->problem.find("outside"), std::string::npos);
  EXPECT_TRUE(find_item(plan, "a.png")->problem.empty());

  // And the batch itself: both fail with their reason, the inputs and outside/ stay untouched.
  const auto before = read_bytes(in + "/a.png");
  o.devices = "cpu:1";
  o.filters = {"box"};
  const BatchReport r = run_batch(o);
  EXPECT_EQ(r.failed(), 2);
  EXPECT_EQ(r.exit_code(), 3);
  EXPECT_TRUE(read_bytes(in + "/a.png") == before);
  EXPECT_TRUE(fs::is_empty(dir / "outside"));
  EXPECT_TRUE(fs::exists(out + "/a.png"));

  // A hard link of an input under an output name is an input too.
  TempDir d2;
  put(d2 / "in/x.png");
  fs::create_directories(d2 / "out");
  fs::create_hard_link(d2 / "in/x.png", d2 / "out/x.png");
  const BatchPlan p2 = plan_batch(options_for(d2 / "in", d2 / "out"));
  EXPECT_NE(p2.items.at(0).problem.find("overwrite an input"), std::string::npos);

  // Symbolic links: an input that is a link to a file in OUT_DIR under its output name, and an output
  // name that is already a link to an input. Neither is written; a plain input beside them is.
  TempDir d3;
  put(d3 / "in/real.png", 20, 10, 4);
  put(d3 / "in/plain.png", 20, 10, 5);
  put(d3 / "out/target.png", 20, 10, 6);
  fs::create_symlink(d3 / "out/target.png", d3 / "in/target.png");
  fs::create_symlink(d3 / "in/real.png", d3 / "out/real.png");
  const BatchPlan p3 = plan_batch(options_for(d3 / "in", d3 / "out"));
  EXPECT_NE(find_item(p3, "target.png")->problem.find("overwrite an input"), std::string::npos);
  EXPECT_NE(find_item(p3, "real.png")->problem.find("overwrite an input"), std::string::npos);
  EXPECT_TRUE(find_item(p3, "plain.png")->problem.empty());
}

TEST(BatchPlan, AFolderTurnedIntoALinkOutOfOutDirAfterThePlanIsRefusedAtWriteTime) {
  // Checked again as each file is written: out/sub made a link to outside/ between the plan and the run.
  TempDir dir;
  const std::string in = dir / "in", out = dir / "out";
  put(in + "/top.png", 20, 10, 7);
  put(in + "/sub/a.png", 20, 10, 8);
  fs::create_directories(dir / "outside");
  BatchOptions o = options_for(in, out);
  o.recursive = true;
  o.devices = "cpu:1";
  o.filters = {"box"};
  BatchPlan plan = prepare_batch(o);
  fs::create_directory_symlink(dir / "outside", out + "/sub");
  const BatchReport r = run_batch(o, std::move(plan), nullptr);
  EXPECT_EQ(r.failed(), 1);
  EXPECT_TRUE(fs::is_empty(dir / "outside"));
  EXPECT_TRUE(fs::exists(out + "/top.png"));
}

TEST(BatchPlan, ResumeTakesOnlyCompleteOutputs) {
  TempDir dir;
  const std::string in = dir / "in", out = dir / "out";
  for (const char* n : {"a.png", "b.png", "c.jpg", "d.png", "e.png"}) put(in + "/" + n, 40, 30, n[0]);
  fs::create_directories(out);
  fs::copy_file(in + "/a.png", out + "/a.png");  // complete
  const auto b = read_bytes(in + "/b.png");
  write_bytes(out + "/b.png", {b.begin(), b.end() - 20});  // cut short: no IEND
  const auto c = read_bytes(in + "/c.jpg");
  write_bytes(out + "/c.jpg", {c.begin(), c.begin() + c.size() / 2});  // no end-of-image marker
  write_bytes(out + "/d.png", {});                                     // empty
  fs::create_symlink(in + "/e.png", out + "/e.png");                   // a link, not an output
  BatchOptions o = options_for(in, out);
  o.resume = true;
  const BatchPlan plan = plan_batch(o);
  EXPECT_TRUE(find_item(plan, "a.png")->complete);
  EXPECT_FALSE(find_item(plan, "b.png")->complete);
  EXPECT_FALSE(find_item(plan, "c.jpg")->complete);
  EXPECT_FALSE(find_item(plan, "d.png")->complete);
  EXPECT_FALSE(find_item(plan, "e.png")->complete);
  // An input newer than its output is done again.
  fs::last_write_time(out + "/a.png", fs::last_write_time(in + "/a.png") - std::chrono::hours(1));
  EXPECT_FALSE(plan_batch(o).items.at(0).complete);
}

TEST(BatchTemporaries, NamesAndStaleCleanup) {
  long pid = 0;
  EXPECT_TRUE(batch::is_temporary_name(".a.png.tf-4242-7.tmp", &pid));
  EXPECT_EQ(pid, 4242);
  EXPECT_TRUE(batch::is_temporary_name(fs::path(temporary_name_for("/x/y/photo.jpg")).filename().string()));
  for (const char* n : {"a.png", ".a.png.tmp", ".a.tf-x-1.tmp", "a.png.tf-1-2.tmp", ".a.tf-12-.tmp", ".tf-1-2.tmp"})
    EXPECT_FALSE(batch::is_temporary_name(n)) << n;

  TempDir dir;
  // A process that has ended: its temporaries are stale. Ours is alive: left alone.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  write_bytes(dir / fmt::format("sub/.a.png.tf-{}-0.tmp", child), {1});
  write_bytes(dir / fmt::format(".b.png.tf-{}-1.tmp", child), {1});
  write_bytes(dir / fmt::format(".c.png.tf-{}-2.tmp", ::getpid()), {1});
  write_bytes(dir / "keep.png", {1});
  EXPECT_EQ(batch::remove_stale_temporaries(dir.path.string()), 2);
  EXPECT_EQ(files_under(dir.path.string()),
            (std::vector<std::string>{fmt::format(".c.png.tf-{}-2.tmp", ::getpid()), "keep.png"}));
}

// The GPUs' own host memory (contexts, nvJPEG's buffers) comes off the default budget, down to 512 MiB;
// the CPU alone keeps the whole of it.
TEST(BatchMemory, DefaultBudgetLeavesRoomForTheGpuCodecs) {
  const std::size_t cpu = batch::default_inflight_bytes();
  EXPECT_LE(cpu, std::size_t{1536} << 20);
  EXPECT_EQ(batch::default_inflight_bytes(0, 0), cpu);
  const std::size_t one = batch::default_inflight_bytes(1, 3), four = batch::default_inflight_bytes(4, 4);
  EXPECT_LE(one, cpu);
  EXPECT_LE(four, one);
  EXPECT_LE(one, std::size_t{1024} << 20);
  if (cpu >= std::size_t{512} << 20) EXPECT_EQ(batch::default_inflight_bytes(8, 24), std::size_t{512} << 20);
}

TEST(BatchMemory, BudgetBlocksUntilReleasedButLetsOneHugeItemThrough) {
  batch::MemoryBudget budget(100);
  EXPECT_TRUE(budget.acquire(60, {}));
  std::atomic<bool> got{false};
  std::thread t([&] {
    EXPECT_TRUE(budget.acquire(60, {}));
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got) << "60 + 60 > 100 must wait";
  budget.release(60);
  t.join();
  EXPECT_TRUE(got);
  budget.release(60);
  EXPECT_TRUE(budget.acquire(500, {})) << "alone, an item larger than the budget passes";
  std::atomic<bool> stop{false};
  std::thread t2([&] { EXPECT_FALSE(budget.acquire(1, [&] { return stop.load(); })); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  stop = true;
  t2.join();
  budget.release(500);
  EXPECT_EQ(budget.peak(), 500u);
}

// --codec auto: the CPU decodes beside the GPU codecs hold at most half the budget in images (pixels, twice with
// a filter), one at least, and no more files than cpu_decode_cap(); a thread that waits for room gets it when a
// decode gives its own back, and gives up after the time it was given.
TEST(BatchMemory, CpuDecodesBesideTheGpuCodecsHoldAtMostHalfTheBudget) {
  const std::size_t photo = std::size_t{4000} * 3000 * 3 * 2;  // a 12-MP RGB photo and its filtered result
  const auto fit = [](std::size_t budget, std::size_t each, int most_files) {
    batch_detail::CpuDecodeShare share(budget, most_files);
    int n = 0;
    while (n < 1000 && share.take(each)) ++n;
    return n;
  };
  EXPECT_EQ(fit(std::size_t{512} << 20, photo, 60), 3);
  EXPECT_EQ(fit(std::size_t{1} << 30, photo, 60), 7);
  EXPECT_EQ(fit(std::size_t{1} << 20, photo, 60), 1) << "one at least, however small the budget";
  EXPECT_EQ(fit(std::size_t{16} << 30, photo, 5), 5) << "never more files than cpu_decode_cap()";
  EXPECT_EQ(fit(std::size_t{16} << 30, photo, 0), 1);
  EXPECT_EQ(fit(std::size_t{512} << 20, photo / 2, 60), 7) << "unfiltered: the pixels alone";

  batch_detail::CpuDecodeShare share(1000, 10);  // 500 bytes for the CPU decodes
  EXPECT_TRUE(share.take(300));
  EXPECT_TRUE(share.take(200));
  EXPECT_FALSE(share.take(1)) << "bytes, not files, are the bound here";
  EXPECT_FALSE(share.take(1, std::chrono::milliseconds(20))) << "gives up after the time given";
  std::atomic<bool> got{false};
  std::thread waiter([&] { got = share.take(250, std::chrono::seconds(30)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load()) << "500 + 250 > 500 must wait";
  share.give_back(300);  // 200 + 250 fit
  waiter.join();
  EXPECT_TRUE(got.load());
  share.give_back(200);
  share.give_back(250);
  EXPECT_TRUE(share.take(5000)) << "alone, an image larger than the share passes";
  EXPECT_FALSE(share.take(1));
}

// The GPU codecs' queue: a held place counts against the capacity, so a producer that takes work
// only after reserve() never waits with it in hand; try_push and try_pop never wait.
TEST(BatchQueue, ReservedPlacesCountAgainstTheCapacity) {
  batch::BoundedQueue<int> q(2);
  q.reserve();
  int one = 1;
  EXPECT_TRUE(q.try_push(one));  // one queued + one held: full
  int two = 2;
  EXPECT_FALSE(q.try_push(two));
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    q.reserve();  // waits for room
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load());
  q.unreserve();  // the first place given back: the waiter gets it
  waiter.join();
  EXPECT_TRUE(got.load());
  q.push_reserved(3);
  EXPECT_EQ(q.try_pop().value_or(-1), 1);
  EXPECT_EQ(q.try_pop().value_or(-1), 3);
  EXPECT_FALSE(q.try_pop().has_value());
  q.close();
  q.reserve();  // a closed queue never makes anyone wait
  EXPECT_FALSE(q.pop().has_value());
}

TEST(BatchMemory, PoolReusesBuffersAndHoldsAtMostItsCap) {
  std::map<void*, std::size_t> sizes;
  std::size_t outstanding = 0, peak = 0, allocations = 0;
  const PixelAllocator counting{[&](std::size_t n) {
                                  void* p = default_allocator().allocate(n);
                                  sizes[p] = n;
                                  outstanding += n, ++allocations;
                                  peak = std::max(peak, outstanding);
                                  return p;
                                },
                                [&](void* p) {
                                  outstanding -= sizes.at(p);
                                  sizes.erase(p);
                                  default_allocator().release(p);
                                }};
  {
    batch::BufferPool pool(counting, 1000);
    void* a = pool.allocate(400);
    pool.release(a);
    void* b = pool.allocate(380);
    EXPECT_EQ(a, b) << "a kept buffer of a fitting size is reused";
    EXPECT_EQ(allocations, 1u);
    void* c = pool.allocate(500);
    pool.release(b);
    pool.release(c);
    EXPECT_EQ(outstanding, 900u) << "released buffers are kept for reuse while under the cap";
    void* d = pool.allocate(700);  // fits none of the kept ones: they make room first
    EXPECT_LE(peak, 1000u);
    void* e = pool.allocate(600);  // over the cap while in use: allowed, given back on release
    pool.release(e);
    EXPECT_EQ(outstanding, 700u);
    pool.release(d);
    const Image img(10, 10, Format{PixelType::U8, 3}, pool.allocator());
    EXPECT_FALSE(img.empty());
  }
  EXPECT_EQ(outstanding, 0u) << "the pool gives everything back when it goes";
  {
    batch::BufferPool pool(counting, 1000);
    void* a = pool.allocate(600);
    void* b = pool.allocate(300);
    pool.release(a);
    EXPECT_EQ(outstanding, 900u);
    pool.keep_at_most(400);  // the free 600 goes now; the 300 in use stays
    EXPECT_EQ(outstanding, 300u);
    pool.release(b);
    EXPECT_EQ(outstanding, 300u) << "a buffer within the new cap is still kept";
    void* c = pool.allocate(500);  // fits nothing kept: the 300 makes room first
    EXPECT_EQ(outstanding, 500u);
    pool.release(c);
    EXPECT_EQ(outstanding, 0u) << "a buffer over the new cap is given back when released";
  }
}

TEST(BatchMemory, BytesPoolReusesVectorsWithinItsCap) {
  constexpr std::size_t M = 1 << 20;
  batch::BytesPool pool(6 * M);
  std::vector<unsigned char> a = pool.take(2 * M);
  EXPECT_TRUE(a.empty());
  EXPECT_GE(a.capacity(), 2 * M);
  a.assign(2 * M, 7);
  const unsigned char* memory = a.data();
  pool.give(std::move(a));
  EXPECT_EQ(a.capacity(), 0u) << "what was given is the pool's";
  std::vector<unsigned char> b = pool.take(2 * M - 1000);
  EXPECT_EQ(b.data(), memory) << "a kept vector of a fitting size is reused";
  EXPECT_TRUE(b.empty());
  pool.give(std::move(b));
  std::vector<unsigned char> small = pool.take(100 << 10);  // the kept 2 MiB would be wasted on it
  EXPECT_NE(small.data(), memory);
  std::vector<unsigned char> big(5 * M, 1);
  pool.give(std::move(big));  // over the cap with the kept one: freed
  std::vector<unsigned char> c = pool.take(4 * M);
  EXPECT_NE(c.data(), memory);
  EXPECT_GE(c.capacity(), 4 * M);
  std::vector<unsigned char> d = pool.take(M + 1);
  EXPECT_EQ(d.data(), memory) << "the kept vector is still there";
}

// Workers as 4xH200 reported them for 2000 photos (2026-11-28): the last GPU joined 1.70 s into a
// 2.53-s batch and took 213 of 1965 files, under half of an even share (246); the third took 300.
std::vector<GpuCodecWorkerSummary> workers_of(const std::vector<std::tuple<std::string, double, int>>& w) {
  std::vector<GpuCodecWorkerSummary> out;
  for (const auto& [device, ready, files] : w) {
    GpuCodecWorkerSummary s;
    s.device = device;
    s.ready_s = ready;
    s.files = files;
    out.push_back(s);
  }
  return out;
}

TEST(BatchReportNotes, GpusThatJoinedTooLateAreNamedWithTheDevicesThatLeaveThemOut) {
  const std::string note = batch::late_gpus_note(
      workers_of({{"gpu0", 0.68, 815}, {"gpu1", 0.94, 637}, {"gpu2", 1.43, 300}, {"gpu3", 1.70, 213}}), 2.53);
  EXPECT_NE(note.find("gpu3 was ready 1.70 s in and took 213 files"), std::string::npos) << note;
  EXPECT_EQ(note.find("gpu2"), std::string::npos) << "gpu2 took more than half an even share: " << note;
  EXPECT_NE(note.find("1965 files"), std::string::npos) << note;
  EXPECT_NE(note.find("2.53-s batch"), std::string::npos) << note;
  EXPECT_NE(note.find("(--devices 0,1,2)"), std::string::npos) << note;

  // A GPU's workers count together; one that was never ready took nothing.
  const std::string two = batch::late_gpus_note(
      workers_of({{"gpu0", 0.7, 500}, {"gpu0", 0.9, 480}, {"gpu1", 1.0, 900}, {"gpu2", -1, 0}}), 3.0);
  EXPECT_NE(two.find("gpu2 was never ready"), std::string::npos) << two;
  EXPECT_NE(two.find("(--devices 0,1)"), std::string::npos) << two;
}

TEST(BatchReportNotes, NoNoteWhenEveryGpuTookItsShareOrTheBatchIsSmall) {
  // Two GPUs (999 / 928 files) and 10 000 photos on four (2841 / 2713 / 2306 / 2112): every GPU counted.
  EXPECT_EQ(batch::late_gpus_note(workers_of({{"gpu0", 0.68, 999}, {"gpu1", 0.95, 928}}), 2.69), "");
  EXPECT_EQ(
      batch::late_gpus_note(
          workers_of({{"gpu0", 0.71, 2841}, {"gpu1", 0.98, 2713}, {"gpu2", 1.53, 2306}, {"gpu3", 1.79, 2112}}), 6.60),
      "");
  EXPECT_EQ(batch::late_gpus_note(workers_of({{"gpu0", 0.7, 40}, {"gpu1", 1.5, 2}}), 1.0), "") << "under 64 files";
  EXPECT_EQ(batch::late_gpus_note(workers_of({{"gpu0", 0.7, 2000}}), 3.8), "") << "one GPU";
  EXPECT_EQ(batch::late_gpus_note({}, 1.0), "") << "no GPU codec";
  // MPI ranks' devices ("r1:gpu0") are named, without a --devices that would mean something else.
  const std::string ranks = batch::late_gpus_note(workers_of({{"r0:gpu0", 0.7, 1500}, {"r1:gpu0", 2.2, 100}}), 3.0);
  EXPECT_NE(ranks.find("r1:gpu0 was ready"), std::string::npos) << ranks;
  EXPECT_EQ(ranks.find("--devices"), std::string::npos) << ranks;
}

}  // namespace
}  // namespace tf::test
