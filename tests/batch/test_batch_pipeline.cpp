// run_batch in process: whole images on one device and split ones across devices give the same
// bits as the reference; pinned-style allocators are used and memory stays within the budget;
// cancel and abort leave only complete outputs; the JSON report.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "batch_fixture.hpp"
#include "jpeg_maker.hpp"
#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/gpu_jpeg.hpp"
#include "tilefilter/util/error.hpp"

namespace fs = std::filesystem;

namespace tf::test {
namespace {

using Status = FileResult::Status;

// A CPU worker that says it is a GPU: the batch then decodes into the allocator it was given.
class FakeGpu final : public Device {
 public:
  explicit FakeGpu(int ordinal) : cpu_(cpu::make_cpu_device(ordinal)) {
    info_ = cpu_->info();
    info_.id = fmt::format("fakegpu{}", ordinal);
    info_.kind = DeviceKind::Cuda;
  }
  const DeviceInfo& info() const override { return info_; }
  TileSize preferred_tile(const TileJob& job) const override { return cpu_->preferred_tile(job); }
  void process(const TileWork& work) override { cpu_->process(work); }
  std::optional<DeviceSample> sample() const override { return DeviceSample{42.0, 0, 0}; }

 private:
  DevicePtr cpu_;
  DeviceInfo info_;
};

// Counts what is outstanding from the underlying allocator, from any thread.
struct CountingAllocator {
  std::mutex mutex;
  std::map<void*, std::size_t> sizes;
  std::size_t outstanding = 0, peak = 0, allocations = 0;
  PixelAllocator alloc{[this](std::size_t n) {
                         void* p = default_allocator().allocate(n);
                         std::lock_guard lock(mutex);
                         sizes[p] = n;
                         outstanding += n;
                         ++allocations;
                         peak = std::max(peak, outstanding);
                         return p;
                       },
                       [this](void* p) {
                         {
                           std::lock_guard lock(mutex);
                           outstanding -= sizes.at(p);
                           sizes.erase(p);
                         }
                         default_allocator().release(p);
                       }};
};

BatchOptions cpu_options(const std::string& in, const std::string& out, std::vector<std::string> filters) {
  BatchOptions o;
  o.input_dir = in;
  o.output_dir = out;
  o.filters = std::move(filters);
  o.devices = "cpu:2";
  o.decode_threads = 2;
  o.encode_threads = 2;
  return o;
}

void expect_matches_reference(const BatchReport& r, const Chain& chain) {
  const auto cpu = std::vector<DevicePtr>{cpu::make_cpu_device(0)};
  for (const auto& f : r.files) {
    SCOPED_TRACE(f.input);
    ASSERT_EQ(f.status, Status::Ok) << f.reason;
    const Image expected = filter_image(decode_file(f.input), chain, cpu, JobOptions{});
    EXPECT_TRUE(same_pixels(decode_file(f.output).view(), expected.view())) << "on " << f.device;
  }
}

TEST(BatchPipeline, WholeAndSplitImagesGiveTheReferenceBits) {
  TempDir dir;
  const std::string in = dir / "in";
  fs::create_directories(in);
  std::uint32_t seed = test_seed(70);
  const std::vector<std::pair<int, int>> sizes = {{50, 40}, {300, 200}, {701, 499}, {1, 1},
                                                  {5, 333}, {640, 480}, {97, 1201}};
  for (std::size_t i = 0; i < sizes.size(); ++i)
    encode_file(in + fmt::format("/i{}.png", i),
                random_image(sizes[i].first, sizes[i].second, Format{PixelType::U8, i % 2 ? 4 : 3}, seed++).view());
  const std::vector<std::string> specs = {kBatchFilter, "sobel"};
  const Chain chain = parse_chain(specs);

  BatchOptions o = cpu_options(in, dir / "out", specs);
  o.device_list = {cpu::make_cpu_device(0), cpu::make_cpu_device(1, 3.0)};  // one deliberately slow
  o.split_pixels = 100000;
  const BatchReport r = run_batch(o);
  EXPECT_EQ(r.exit_code(), 0);
  expect_matches_reference(r, chain);
  int split = 0, shared = 0;
  for (const auto& f : r.files) {
    const bool big = static_cast<long long>(f.width) * f.height >= o.split_pixels;
    const bool on_both = f.device.find('+') != std::string::npos;
    if (!big) EXPECT_FALSE(on_both) << f.input << " is small and goes whole to one device, not " << f.device;
    if (big) EXPECT_GE(f.tiles, 2) << f.input;
    split += big;
    shared += on_both;
  }
  EXPECT_EQ(split, 3);
  EXPECT_GE(shared, 1) << "split images are shared by both devices";
  const int images = r.images_per_device.at(0) + r.images_per_device.at(1);
  EXPECT_GE(images, static_cast<int>(sizes.size()));
  EXPECT_LE(images, static_cast<int>(sizes.size()) + split);
  ASSERT_EQ(r.devices.size(), 3u);  // two workers and the fallback
  EXPECT_GT(r.devices[0].tiles, 0);
  EXPECT_GT(r.devices[0].busy_s, 0);

  // Failing tile attempts are retried elsewhere; the bits stay the same.
  o.output_dir = dir / "out2";
  o.job.faults.rate = 0.3;
  o.job.faults.all_devices = true;
  const BatchReport faulty = run_batch(o);
  expect_matches_reference(faulty, chain);
  int retried = 0;
  for (const auto& f : faulty.files) retried += f.retried_tiles;
  EXPECT_GT(retried, 0);
}

// A CPU-only batch with a filter streams each JPEG band by band on one CPU worker: the same bytes as the
// whole path (images split over the workers, --split-pixels 1), each file holding at most kStreamFileBytes
// of the budget instead of its pixels twice; PNGs still go whole.
TEST(BatchPipeline, CpuOnlyJpegsStreamBandByBandWithTheWholePathsBytes) {
  TempDir dir;
  const std::string in = dir / "in";
  fs::create_directories(in);
  std::uint32_t seed = test_seed(75);
  const std::vector<std::pair<int, int>> sizes = {{3072, 2048}, {1203, 901}, {37, 1500}, {1, 1}, {2000, 17}};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const Image img = random_image(sizes[i].first, sizes[i].second, Format{PixelType::U8, i == 3 ? 1 : 3}, seed++);
    EncodeOptions eo;
    eo.quality = 90;
    eo.subsampling = ChromaSubsampling::S420;
    encode_file(in + fmt::format("/p{}.jpg", i), img.view(), eo);
  }
  encode_file(in + "/q.png", random_image(300, 200, Format{PixelType::U8, 3}, seed++).view());
  const std::vector<std::string> specs = {"gaussian:sigma=2"};

  BatchOptions streamed = cpu_options(in, dir / "streamed", specs);
  const BatchReport rs = run_batch(streamed);
  ASSERT_EQ(rs.exit_code(), 0);
  BatchOptions whole = cpu_options(in, dir / "whole", specs);
  whole.split_pixels = 1;  // every image split over both workers: never streamed
  const BatchReport rw = run_batch(whole);
  ASSERT_EQ(rw.exit_code(), 0);
  ASSERT_EQ(rs.files.size(), sizes.size() + 1);
  for (std::size_t k = 0; k < rs.files.size(); ++k) {
    SCOPED_TRACE(rs.files[k].input);
    EXPECT_EQ(read_bytes(rs.files[k].output), read_bytes(rw.files[k].output));
    EXPECT_GT(rs.files[k].width, 0);
    EXPECT_EQ(rs.files[k].encoder, rw.files[k].encoder);
  }
  // The 6-Mpix photo holds 16 MiB streamed (the batch's kStreamFileBytes), its source and result (36 MiB) whole.
  const std::size_t largest_image = 3072ULL * 2048 * 3, stream_file_bytes = 16ULL << 20;
  EXPECT_GE(rw.peak_inflight_bytes, 2 * largest_image) << "the whole path holds a file's source and result";
  EXPECT_LE(rs.peak_inflight_bytes, 2 * stream_file_bytes) << "two decode threads, at most a streamed file each";
}

// A progressive JPEG's reader holds its whole-image DCT coefficients (libjpeg gathers every scan before the
// first row): the budget counts them beside a streamed file's bands and beside the whole path's source and
// result while it decodes, and the streamed output is the whole path's, byte for byte. A baseline file of the
// same size holds the bands (or the images) alone.
TEST(BatchPipeline, ProgressiveJpegsChargeTheirCoefficients) {
  TempDir dir;
  const std::string in = dir / "in";
  fs::create_directories(in);
  const int w = 1203, h = 901;  // not whole MCUs
  const Image img = random_image(w, h, Format{PixelType::U8, 3}, test_seed(76));
  test::JpegShape shape;  // 4:2:0
  shape.progressive = true;
  write_bytes(in + "/progressive.jpg", test::libjpeg_encode(img.view(), shape));
  const std::vector<std::string> specs = {"gaussian:sigma=2"};
  const std::size_t bands = 2ULL * w * h * 3;  // below the 16 MiB a file: the source and its result
  const std::size_t luma = std::size_t{1216} * 912, coefficients = 2 * (luma + 2 * luma / 4);
  std::size_t whole_peak[2] = {0, 0};  // baseline, progressive
  for (const bool progressive : {true, false}) {
    SCOPED_TRACE(progressive ? "progressive" : "baseline");
    if (!progressive) {
      fs::remove(in + "/progressive.jpg");
      shape.progressive = false;
      write_bytes(in + "/baseline.jpg", test::libjpeg_encode(img.view(), shape));
    }
    BatchOptions streamed = cpu_options(in, dir / (progressive ? "sp" : "sb"), specs);
    streamed.decode_threads = 1;
    const BatchReport rs = run_batch(streamed);
    ASSERT_EQ(rs.exit_code(), 0);
    EXPECT_EQ(rs.peak_inflight_bytes, bands + (progressive ? coefficients : 0));
    BatchOptions whole = cpu_options(in, dir / (progressive ? "wp" : "wb"), specs);
    whole.split_pixels = 1;  // split over both workers: never streamed
    whole.decode_threads = 1;
    const BatchReport rw = run_batch(whole);
    ASSERT_EQ(rw.exit_code(), 0);
    EXPECT_EQ(read_bytes(rs.files[0].output), read_bytes(rw.files[0].output));
    whole_peak[progressive ? 1 : 0] = rw.peak_inflight_bytes;
  }
  // The whole path holds the coefficients while it decodes, beside the source and its result (rows padded).
  EXPECT_EQ(whole_peak[1] - whole_peak[0], coefficients);
  EXPECT_GE(whole_peak[0], bands);
}

// --codec: without a GPU codec (CPU devices, or a build without nvJPEG) auto keeps the CPU codecs
// with a note, and gpu is refused before OUT_DIR is touched. The GPU suite covers the codec itself.
TEST(BatchPipeline, CodecChoiceWithoutAGpuCodec) {
  TempDir dir;
  const std::string in = dir / "in";
  make_flat_folder(in, 4, 120, 90, test_seed(75));
  BatchOptions o = cpu_options(in, dir / "auto", {kBatchFilter});
  const BatchReport automatic = run_batch(o);
  EXPECT_EQ(automatic.exit_code(), 0);
  EXPECT_EQ(automatic.codec, "auto");
  EXPECT_EQ(automatic.gpu_codec_lanes, 0);
  EXPECT_NE(automatic.codec_note.find("JPEGs decoded on the CPU"), std::string::npos) << automatic.codec_note;
  o.codec = CodecChoice::Cpu;
  o.output_dir = dir / "cpu";
  const BatchReport cpu = run_batch(o);
  EXPECT_TRUE(cpu.codec_note.empty());
  ASSERT_EQ(cpu.files.size(), automatic.files.size());
  for (std::size_t i = 0; i < cpu.files.size(); ++i) {
    EXPECT_EQ(read_bytes(cpu.files[i].output), read_bytes(automatic.files[i].output)) << cpu.files[i].output;
    EXPECT_FALSE(automatic.files[i].decoder.starts_with("nvjpeg"));
  }
  const auto json = nlohmann::json::parse(batch_report_json(automatic));
  EXPECT_EQ(json["codec"]["asked"], "auto");
  EXPECT_EQ(json["codec"]["files_decoded_on_gpu"], 0);

  o.codec = CodecChoice::Gpu;
  o.output_dir = dir / "gpu";
  try {
    (void)run_batch(o);
    ADD_FAILURE() << "--codec gpu ran without a GPU codec";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("--codec gpu"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "gpu"));
  EXPECT_THROW((void)parse_codec_choice("fast"), Error);
}

TEST(BatchPipeline, DecodesIntoTheGivenAllocatorAndStaysWithinTheBudget) {
  TempDir dir;
  const std::string in = dir / "in";
  const int count = 30, w = 200, h = 150;
  make_flat_folder(in, count, w, h, test_seed(80));
  const std::size_t image_bytes = (static_cast<std::size_t>(w) * 3 + 63) / 64 * 64 * h;  // rows padded to 64 bytes
  CountingAllocator counting;
  BatchOptions o = cpu_options(in, dir / "out", {kBatchFilter});
  o.device_list = {std::make_shared<FakeGpu>(0), std::make_shared<FakeGpu>(1)};
  o.allocator = &counting.alloc;
  o.max_inflight_bytes = 5 * image_bytes;  // two files (source + result) and a half
  o.decode_threads = 3;
  const BatchReport r = run_batch(o);
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_EQ(r.count(Status::Ok), count);
  EXPECT_GT(counting.allocations, 0u) << "decoded pixels go to the given allocator when a GPU is used";
  EXPECT_LT(counting.allocations, static_cast<std::size_t>(count)) << "buffers are recycled";
  EXPECT_LE(r.peak_inflight_bytes, o.max_inflight_bytes);
  EXPECT_GT(r.memory_wait_s, 0.0) << "three decode threads on a budget of two and a half files wait for room";
  EXPECT_LE(counting.peak, o.max_inflight_bytes + o.max_inflight_bytes / 4 + 2 * image_bytes)
      << "everything held stays near the budget, far below the folder's " << count * 2 * image_bytes << " bytes";
  EXPECT_EQ(counting.outstanding, 0u);
  EXPECT_NEAR(r.devices.at(0).mean_utilization, 42.0, 1e-9) << "device samples reach the summary";
}

// A GPU codec lane made of the CPU codecs (pixels back; JPEG streams too when it `encodes`), so that the
// batch's GPU codec path runs without a GPU.
class CpuCodecLane final : public GpuJpegLane {
 public:
  explicit CpuCodecLane(int refuse_every = 0, bool encodes = false) : refuse_every_(refuse_every), encodes_(encodes) {}
  std::vector<GpuJpegOutcome> run_batch(std::span<const GpuJpegJob> jobs) override {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<GpuJpegOutcome> out(jobs.size());
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      const GpuJpegJob& job = jobs[k];
      if (job.encode && !encodes_) {
        out[k].error = "this test lane does not encode";
        continue;
      }
      if (refuse_every_ > 0 && ++seen_ % refuse_every_ == 0) {
        out[k].error = job.name + ": refused by the test lane";
        continue;
      }
      Image img = decode_memory(job.jpeg, job.name);
      if (job.chain && !job.chain->empty()) {
        JobOptions options;
        options.border = job.border;
        img = filter_image(img, *job.chain, {cpu::make_cpu_device(0)}, options);
      }
      Image back(img.width(), img.height(), img.format(), job.allocator ? *job.allocator : default_allocator());
      const std::size_t row = static_cast<std::size_t>(img.width()) * img.format().pixel_bytes();
      for (int y = 0; y < img.height(); ++y)
        std::memcpy(back.view().data + y * back.pitch(), img.view().data + y * img.pitch(), row);
      GpuJpegResult& r = out[k].result;
      r.width = img.width();
      r.height = img.height();
      r.format = img.format();
      r.decoder = "test-lane";
      if (job.encode) {
        const auto stream =
            encode_jpeg_with(have_turbojpeg() ? "turbojpeg" : "stb", back.view(), job.quality, job.subsampling);
        if (job.stream_buffer) r.jpeg = job.stream_buffer(stream.size());  // the batch's memory, as nvJPEG's lane
        r.jpeg.assign(stream.begin(), stream.end());
        r.encoder = "test-lane";
      } else {
        r.pixels = std::move(back);
      }
    }
    steps_.cuda_decode_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }
  std::size_t reserved_bytes() const override { return 0; }
  GpuJpegSteps steps() const override { return steps_; }

 private:
  int refuse_every_ = 0, seen_ = 0;
  bool encodes_ = false;
  GpuJpegSteps steps_;  // its whole calls, as decode
};

// Makes the batch's GPU codec workers CpuCodecLanes (each refusing every `*refuse_every`-th file, when
// given) for one test.
class ScopedCpuCodecLanes {
 public:
  explicit ScopedCpuCodecLanes(const int* refuse_every = nullptr, bool encodes = false) {
    set_gpu_jpeg_provider([refuse_every, encodes](const Device&, std::string*) {
      return std::make_unique<CpuCodecLane>(refuse_every ? *refuse_every : 0, encodes);
    });
  }
  ~ScopedCpuCodecLanes() { set_gpu_jpeg_provider({}); }
  ScopedCpuCodecLanes(const ScopedCpuCodecLanes&) = delete;
  ScopedCpuCodecLanes& operator=(const ScopedCpuCodecLanes&) = delete;
};

// 24 files of 192x144 in `in` (rows of 576 bytes: no padding, so a budget in images is exact), half of them
// JPEGs; a batch of them to PNG on a fake GPU with six decode threads and a budget of `images` images.
BatchOptions fake_gpu_to_png(const std::string& in, const std::string& out, std::size_t images) {
  const int w = 192, h = 144;
  make_flat_folder(in, 24, w, h, test_seed(95));
  BatchOptions o = cpu_options(in, out, {kBatchFilter});
  o.device_list = {std::make_shared<FakeGpu>(0)};
  o.format = "png";
  o.decode_threads = 6;
  o.max_inflight_bytes = images * std::size_t{w} * h * 3;
  return o;
}

// --codec gpu to PNG with a budget of a few images: a lane's batch of files, whose charges (each its result,
// taken when the file was queued) fill the budget with those queued behind them, still gets its results back.
// The results were charged a second time, and the lane waited for room for ever.
TEST(BatchPipeline, GpuCodecsHandingBackPixelsFinishWithinASmallBudget) {
  if (have_gpu_jpeg()) GTEST_SKIP() << "this build has a GPU JPEG codec; the GPU suite runs --codec gpu with it";
  const ScopedCpuCodecLanes lanes;
  TempDir dir;
  BatchOptions o = fake_gpu_to_png(dir / "in", dir / "out", 8);
  o.codec = CodecChoice::Gpu;
  const BatchReport r = run_batch(o);
  EXPECT_EQ(r.exit_code(), 0);
  expect_matches_reference(r, parse_chain(o.filters));
  const long on_lane =
      std::count_if(r.files.begin(), r.files.end(), [](const FileResult& f) { return f.decoder == "test-lane"; });
  EXPECT_EQ(on_lane, 12) << "every JPEG of the folder";
  EXPECT_LE(r.peak_inflight_bytes, o.max_inflight_bytes);
  // Each worker's time: when its lane was ready, its calls and their files, busy and starved within the batch.
  ASSERT_EQ(r.codec_workers.size(), static_cast<std::size_t>(r.gpu_codec_lanes));
  int files = 0;
  for (const GpuCodecWorkerSummary& w : r.codec_workers) {
    EXPECT_EQ(w.device, "fakegpu0");
    EXPECT_GE(w.ready_s, 0.0);
    EXPECT_GE(w.files, w.calls);
    EXPECT_LE(w.ready_s + w.busy_s + w.starved_s, r.wall_s + 1e-3);
    if (w.calls > 0) EXPECT_GT(w.busy_s, 0.0);
    // What the lane says its calls spent, within the worker's busy time.
    EXPECT_EQ(w.steps.cuda_decode_s > 0, w.calls > 0);
    EXPECT_LE(w.steps.cuda_decode_s, w.busy_s + 1e-6);
    files += w.files;
  }
  EXPECT_EQ(files, 12);
  const auto json = nlohmann::json::parse(batch_report_json(r));
  EXPECT_EQ(json["codec"]["workers"].size(), r.codec_workers.size());
  for (const auto& w : json["codec"]["workers"])
    for (const char* step : {"parse_s", "hw_decode_s", "cuda_decode_s", "queue_s", "wait_s", "retrieve_s"})
      EXPECT_TRUE(w["steps"].contains(step)) << step;
}

// JPEGs that the GPU codecs decode, filter and encode (here a lane that encodes on the CPU) are written with
// their input's metadata, or without it under --strip.
TEST(BatchPipeline, JpegsTheGpuCodecsEncodeKeepTheirMetadata) {
  if (have_gpu_jpeg()) GTEST_SKIP() << "this build has a GPU JPEG codec; the GPU suite runs --codec gpu with it";
  const ScopedCpuCodecLanes lanes(nullptr, /*encodes=*/true);
  TempDir dir;
  make_flat_folder(dir / "in", 12, 192, 144, test_seed(96));
  Metadata md;
  md.xmp =
      "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">"
      "<rdf:Description rdf:about=\"\">batch test</rdf:Description></rdf:RDF></x:xmpmeta>";
  auto is_jpeg = [](const fs::path& p) { return p.extension() == ".jpg"; };
  int jpegs = 0;
  for (const auto& f : fs::directory_iterator(dir / "in"))
    if (is_jpeg(f.path())) {
      write_bytes(f.path().string(), jpeg_with_metadata(read_bytes(f.path().string()), md));
      ++jpegs;
    }
  ASSERT_GT(jpegs, 0);
  for (const bool strip : {false, true}) {
    SCOPED_TRACE(strip ? "--strip" : "metadata kept");
    BatchOptions o = cpu_options(dir / "in", dir / (strip ? "stripped" : "out"), {kBatchFilter});
    o.device_list = {std::make_shared<FakeGpu>(0)};
    o.codec = CodecChoice::Gpu;
    o.strip = strip;
    const BatchReport r = run_batch(o);
    EXPECT_EQ(r.exit_code(), 0);
    int encoded = 0;
    for (const FileResult& f : r.files) {
      if (!is_jpeg(f.output)) continue;
      ++encoded;
      EXPECT_EQ(f.encoder, "test-lane") << f.output;
      const JpegStreamInfo info = jpeg_stream_info(read_bytes(f.output), f.output);
      EXPECT_EQ(info.metadata.xmp, strip ? "" : md.xmp) << f.output;
      EXPECT_EQ(info.width, 192);
    }
    EXPECT_EQ(encoded, jpegs);
  }
}

// Files the GPU codecs refuse (every one, or every second) are decoded on the CPU by the codec worker,
// which alone takes the files queued for it: that decode must not wait for budget those files hold. With
// a budget of three or eight images, --codec gpu and auto finish, every output the reference's bits, the
// budget exceeded by at most the worker's one image and its result.
TEST(BatchPipeline, FilesTheGpuCodecsRefuseFinishWithinASmallBudget) {
  if (have_gpu_jpeg()) GTEST_SKIP() << "this build has a GPU JPEG codec; the GPU suite runs --codec gpu with it";
  int refuse_every = 1;
  const ScopedCpuCodecLanes lanes(&refuse_every);
  TempDir dir;
  const std::string in = dir / "in";
  const int w = 192, h = 144;  // rows of 576 bytes: no padding, so the budget below is exact
  const std::size_t image = std::size_t{w} * h * 3;
  make_flat_folder(in, 48, w, h, test_seed(97));
  const std::vector<std::string> specs = {kBatchFilter};
  for (int every : {1, 2})
    for (std::size_t images : {3, 8})
      for (CodecChoice codec : {CodecChoice::Gpu, CodecChoice::Auto}) {
        SCOPED_TRACE(fmt::format("every {} refused, {} images, --codec {}", every, images, to_string(codec)));
        refuse_every = every;
        BatchOptions o = cpu_options(in, dir / fmt::format("out-{}-{}-{}", every, images, to_string(codec)), specs);
        o.device_list = {std::make_shared<FakeGpu>(0)};
        o.format = "png";
        o.codec = codec;
        o.decode_threads = 6;
        o.max_inflight_bytes = images * image;
        const BatchReport r = run_batch(o);
        EXPECT_EQ(r.exit_code(), 0);
        expect_matches_reference(r, parse_chain(specs));
        EXPECT_LE(r.peak_inflight_bytes, o.max_inflight_bytes + 2 * image);
      }
}

// The most CPU decodes of JPEGs (on a decode thread, not the lane) that ran at once, budget waits inside them
// included: the last decode record of each such file is its decode, the one before it the read of its header.
int most_cpu_jpeg_decodes_at_once(const BatchReport& r) {
  std::map<int, StageRecord> last;
  for (const StageRecord& rec : r.records)
    if (rec.device < 0 && rec.stage == StageKind::Decode && (!last.count(rec.tile) || rec.t0 >= last[rec.tile].t0))
      last[rec.tile] = rec;
  std::vector<std::pair<double, int>> edges;
  for (const auto& [i, rec] : last)
    if (r.files.at(i).input.ends_with(".jpg") && r.files.at(i).decoder != "test-lane")
      edges.insert(edges.end(), {{rec.t0, 1}, {rec.t1, -1}});
  std::sort(edges.begin(), edges.end(),
            [](auto a, auto b) { return a.first != b.first ? a.first < b.first : a.second < b.second; });
  int now = 0, most = 0;
  for (const auto& e : edges) most = std::max(most, now += e.second);
  return most;
}

// --codec auto beside GPU codec workers: the CPU decodes of JPEGs hold at most half the budget in images, before
// a lane is ready too (here two filtered images; unbounded, the six decode threads each began one while no lane
// was ready, five at once). A lane that never comes does not hold the batch up; one on time takes files. The bits
// are the reference's either way.
TEST(BatchPipeline, CodecAutoKeepsCpuDecodesWithinHalfTheBudget) {
  if (have_gpu_jpeg()) GTEST_SKIP() << "this build has a GPU JPEG codec; the GPU suite runs --codec auto with it";
  const ScopedCpuCodecLanes lanes;
  TempDir dir;
  BatchOptions o = fake_gpu_to_png(dir / "in", "", 8);  // half of it: two images, each with its result
  struct Run {
    const char* name;
    CodecChoice codec;
    int delay_ms;
  };
  // --codec gpu too: a lane's batch of files, their charges filling the budget, must still get room for its results.
  for (const Run run : {Run{"auto, lane never ready", CodecChoice::Auto, -1}, Run{"auto", CodecChoice::Auto, 0},
                        Run{"gpu", CodecChoice::Gpu, 0}}) {
    SCOPED_TRACE(run.name);
    o.codec = run.codec;
    o.job.faults.codec_lane_delay_ms = run.delay_ms;
    o.output_dir = dir / fmt::format("out-{}-{}", to_string(run.codec), run.delay_ms);
    const BatchReport r = run_batch(o);
    EXPECT_EQ(r.exit_code(), 0);
    EXPECT_GE(r.gpu_codec_lanes, 1);
    expect_matches_reference(r, parse_chain(o.filters));
    const long on_lane =
        std::count_if(r.files.begin(), r.files.end(), [](const FileResult& f) { return f.decoder == "test-lane"; });
    if (run.delay_ms < 0) EXPECT_EQ(on_lane, 0);
    for (const GpuCodecWorkerSummary& w : r.codec_workers)
      if (run.delay_ms < 0) EXPECT_EQ(w.ready_s, -1.0) << "never ready";
    if (run.codec == CodecChoice::Gpu) EXPECT_EQ(on_lane, 12) << "every JPEG";
    const int most = most_cpu_jpeg_decodes_at_once(r);
    std::cout << fmt::format("[batch] {}: {} of 24 files on the lane, {} CPU JPEG decodes at once at most\n", run.name,
                             on_lane, most);
    if (run.delay_ms < 0) EXPECT_GE(most, 1);
    EXPECT_LE(most, 2);
    EXPECT_LE(r.peak_inflight_bytes, o.max_inflight_bytes);
  }
}

// A lane whose halves take time (GpuJpegLane::begin_batch, end_batch) and which, as nvJPEG's with its two
// sets of decode buffers, keeps a third begin_batch waiting until the first batch has ended: the CPU codec
// lane's work in end_batch. One that `copies` takes the bytes in begin_batch, as nvJPEG's decoder does, and
// says so (done_with_bytes_at_begin): the batch then reuses them at once.
class SlowHalvesLane final : public GpuJpegLane {
 public:
  explicit SlowHalvesLane(bool copies = false) : copies_(copies) {}
  std::vector<GpuJpegOutcome> run_batch(std::span<const GpuJpegJob> jobs) override { return inner_.run_batch(jobs); }
  std::unique_ptr<GpuJpegPending> begin_batch(std::span<const GpuJpegJob> jobs) override {
    {
      std::unique_lock lock(mutex_);
      ended_one_.wait(lock, [&] { return begun_ - ended_ < 2; });
      ++begun_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    auto pending = std::make_unique<Jobs>();
    pending->given = jobs;
    if (copies_) {
      pending->bytes.reserve(jobs.size());
      for (const GpuJpegJob& job : jobs) {
        pending->bytes.emplace_back(job.jpeg.begin(), job.jpeg.end());
        pending->copies.push_back(job);
        pending->copies.back().jpeg = pending->bytes.back();
      }
    }
    return pending;
  }
  std::vector<GpuJpegOutcome> end_batch(std::unique_ptr<GpuJpegPending> pending) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(6));
    auto& jobs = static_cast<Jobs&>(*pending);
    if (copies_)
      for (const GpuJpegJob& job : jobs.given)
        EXPECT_TRUE(job.jpeg.empty()) << job.name << ": the batch keeps bytes the lane no longer needs";
    auto out = inner_.run_batch(copies_ ? std::span<const GpuJpegJob>(jobs.copies) : jobs.given);
    {
      std::lock_guard lock(mutex_);
      ++ended_;
    }
    ended_one_.notify_all();
    return out;
  }
  std::size_t reserved_bytes() const override { return 0; }
  bool done_with_bytes_at_begin() const override { return copies_; }

 private:
  struct Jobs final : GpuJpegPending {
    std::span<const GpuJpegJob> given;
    std::vector<std::vector<unsigned char>> bytes;  // copies_: the files' bytes, and the jobs that read them
    std::vector<GpuJpegJob> copies;
  };
  const bool copies_;
  CpuCodecLane inner_{0, /*encodes=*/true};
  std::mutex mutex_;
  std::condition_variable ended_one_;
  int begun_ = 0, ended_ = 0;
};

// Twelve workers on four GPUs, each beginning a batch while its second thread ends the one before, lanes
// that come late (the CPU codecs working meanwhile), budgets of a few images: every file comes out (as
// the reference has it, where the outputs are lossless).
TEST(BatchPipeline, WorkersWithOverlappingHalvesFinishEveryFileWithinSmallBudgets) {
  if (have_gpu_jpeg()) GTEST_SKIP() << "this build has a GPU JPEG codec; the GPU suite runs the batch with it";
  TempDir dir;
  make_flat_folder(dir / "in", 600, 64, 48, test_seed(97));
  for (const bool copies : {false, true})
    for (const auto& [images, format] : {std::pair{3, "same"}, std::pair{20, "same"}, std::pair{3, "png"}}) {
      SCOPED_TRACE(fmt::format("budget of {} images, format {}, lane {}", images, format,
                               copies ? "done with the bytes at begin_batch" : "reading the bytes to the end"));
      set_gpu_jpeg_provider([copies](const Device&, std::string*) { return std::make_unique<SlowHalvesLane>(copies); });
      BatchOptions o = cpu_options(dir / "in", dir / fmt::format("out{}{}{}", images, format, copies), {kBatchFilter});
      o.format = format;
      o.device_list = {std::make_shared<FakeGpu>(0), std::make_shared<FakeGpu>(1), std::make_shared<FakeGpu>(2),
                       std::make_shared<FakeGpu>(3)};
      o.gpu_codec_lanes = 3;
      o.decode_threads = 16;
      o.encode_threads = 2;
      o.job.faults.codec_lane_delay_ms = 30;
      o.max_inflight_bytes = static_cast<std::size_t>(images) * 64 * 48 * 3;
      const BatchReport r = run_batch(o);
      EXPECT_EQ(r.exit_code(), 0);
      EXPECT_EQ(r.files.size(), 600u);
      EXPECT_EQ(r.gpu_codec_batch, kDefaultGpuCodecBatch) << "the report says how full a call could be";
      if (o.format == "png")
        expect_matches_reference(r, parse_chain(o.filters));  // the JPEGs the lane encodes are lossy
    }
  set_gpu_jpeg_provider({});
}

TEST(BatchPipeline, CancelStopsTakingFilesAndFinishesTheOnesInFlight) {
  TempDir dir;
  const std::string in = dir / "in", out = dir / "out";
  make_flat_folder(in, 14, 160, 120, test_seed(90));
  std::atomic<bool> cancel{false};
  BatchOptions o = cpu_options(in, out, {kBatchFilter});
  o.decode_threads = 1;
  o.max_inflight_bytes = 3 * 160 * 3 * 120;  // about one file (source and result) in flight
  o.cancel = &cancel;
  int calls = 0;
  o.progress = [&](const BatchProgress& p) {
    ++calls;
    EXPECT_EQ(p.files_total, 14);
    if (p.files_done >= 2) cancel = true;
  };
  const BatchReport r = run_batch(o);
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(r.exit_code(), 3);
  EXPECT_GE(r.count(Status::Ok), 2);
  EXPECT_GE(r.count(Status::Cancelled), 1);
  EXPECT_EQ(r.failed(), 0);
  for (const auto& f : r.files) {
    if (f.status == Status::Ok) EXPECT_NO_THROW(decode_file(f.output));
    if (f.status == Status::Cancelled) {
      EXPECT_FALSE(fs::exists(f.output));
      EXPECT_NE(f.reason.find("not started"), std::string::npos)
          << "a plain cancel finishes what is in flight: " << f.reason;
    }
  }
  EXPECT_TRUE(temporaries_under(out).empty());
  EXPECT_GT(calls, 0);
}

TEST(BatchPipeline, AbortDiscardsTheFilesInFlightAndLeavesNothingPartial) {
  TempDir dir;
  const std::string in = dir / "in", out = dir / "out";
  make_flat_folder(in, 10, 300, 200, test_seed(100));
  std::atomic<bool> cancel{false}, abort{false};
  BatchOptions o = cpu_options(in, out, {"gaussian:sigma=3"});
  o.cancel = &cancel;
  o.abort = &abort;
  o.progress = [&](const BatchProgress& p) {
    if (p.files_done >= 1) cancel = abort = true;
  };
  const BatchReport r = run_batch(o);
  EXPECT_TRUE(r.cancelled);
  EXPECT_LT(r.count(Status::Ok), 10);
  EXPECT_TRUE(temporaries_under(out).empty());
  for (const auto& f : r.files) EXPECT_EQ(fs::exists(f.output), f.status == Status::Ok) << f.output;
}

// The budget is named as the bound only where what it feeds waited for it: threads that wait for room while
// busy GPU codec workers take whole batches wait behind the GPUs.
TEST(BatchReport, TheBudgetIsTheBoundOnlyWhereTheDevicesWaitedForIt) {
  BatchReport r;
  r.files.resize(1000);
  r.wall_s = 5;
  r.memory_wait_s = 0.4;
  EXPECT_FALSE(r.memory_bound()) << "threads waited under a tenth of the run";
  r.memory_wait_s = 240;  // summed over 64 decode threads
  EXPECT_TRUE(r.memory_bound()) << "no GPU codec workers: the devices' work waited on the budget";
  r.gpu_codec_lanes = 4;
  r.gpu_codec_batch = 32;
  for (int g = 0; g < 4; ++g) r.codec_workers.push_back({fmt::format("gpu{}", g), 0.7, 8, 248, 4.2, 0.02, {}});
  EXPECT_FALSE(r.memory_bound()) << "busy workers with whole batches set the pace";
  const GpuCodecPace pace = gpu_codec_pace(r);
  EXPECT_EQ(pace.files, 992);
  EXPECT_EQ(pace.calls, 32);
  EXPECT_NEAR(pace.busy_share, 4.2 / 4.22, 1e-9);
  EXPECT_TRUE(pace.set_the_pace);
  for (auto& w : r.codec_workers) w.calls = 11;  // 22.5 files a call
  EXPECT_TRUE(r.memory_bound()) << "the budget cut the workers' calls short";
  for (auto& w : r.codec_workers) {
    w.calls = 8;
    w.starved_s = 1.5;
  }
  EXPECT_TRUE(r.memory_bound()) << "the workers waited for files";
  for (auto& w : r.codec_workers) {
    w.starved_s = 0.02;
    w.files = 100;
    w.calls = 3;
  }
  EXPECT_TRUE(r.memory_bound()) << "the GPU codecs took under half the files: the rest waited on the budget";
}

TEST(BatchPipeline, ReportIsValidJsonWithEveryFile) {
  TempDir dir;
  const std::string in = dir / "in";
  const MixedFolder m = make_mixed_folder(in, test_seed(110));
  BatchOptions o = cpu_options(in, dir / "out", {kBatchFilter});
  o.recursive = true;
  const BatchReport r = run_batch(o);
  const auto j = nlohmann::json::parse(batch_report_json(r));
  EXPECT_EQ(j.at("files").size(), m.images.size());
  EXPECT_EQ(j.at("counts").at("failed").get<int>(), r.failed());
  EXPECT_EQ(j.at("exit_code").get<int>(), 3);
  for (const auto& f : j.at("files")) {
    const std::string status = f.at("status");
    EXPECT_TRUE(status == "ok" || status == "failed") << status;
    if (status == "ok") {
      EXPECT_GT(f.at("width").get<int>(), 0);
      EXPECT_GE(f.at("decode_s").get<double>(), 0);
      EXPECT_FALSE(f.at("device").get<std::string>().empty());
    } else {
      EXPECT_FALSE(f.at("reason").get<std::string>().empty());
    }
  }
  EXPECT_GE(j.at("devices").size(), 1u);
  EXPECT_EQ(j.at("skipped").size(), m.others.size());
  EXPECT_GT(j.at("megapixels_per_s").get<double>(), 0);
}

}  // namespace
}  // namespace tf::test
