// The GPU JPEG codec (tilefilter/gpu_jpeg.hpp, nvJPEG): decoded pixels within 2 of libjpeg-turbo's
// on photo-like images of every subsampling; the filter on GPU-decoded pixels equal bit for bit to
// the CPU backend on the same pixels; the same bits on every run; corrupt, truncated and
// unsupported streams refused without harm to the lane; a thousand files without device memory
// growth; and a batch with --codec gpu that sends what the GPU cannot take to the CPU codec.
// Skips where there is no GPU or the build has no nvJPEG (CI).
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "gpu_test_support.hpp"
#include "jpeg_maker.hpp"
#include "tilefilter/batch/batch.hpp"
#include "tilefilter/image/testimage.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/gpu_jpeg.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::gputest {
namespace {

namespace fs = std::filesystem;

#define TF_REQUIRE_GPU_JPEG()                                                                               \
  do {                                                                                                      \
    TF_REQUIRE_GPU();                                                                                       \
    if (!have_gpu_jpeg()) GTEST_SKIP() << "no GPU JPEG codec: this build has no nvJPEG (CUDA's libnvjpeg)"; \
  } while (0)

std::unique_ptr<GpuJpegLane> lane() {
  std::string why;
  auto l = make_gpu_jpeg_lane(*gpus().front(), &why);
  if (!l) ADD_FAILURE() << "no lane: " << why;
  return l;
}

Image gpu_decode(GpuJpegLane& l, const std::vector<unsigned char>& jpeg, const Chain* chain = nullptr,
                 Border border = {}) {
  GpuJpegJob job;
  job.jpeg = jpeg;
  job.name = "test.jpg";
  job.chain = chain;
  job.border = border;
  job.encode = false;
  return std::move(l.run(job).pixels);
}

struct Shape {
  const char* name;
  int channels, h_samp, v_samp;
};
constexpr Shape kShapes[] = {{"4:4:4", 3, 1, 1}, {"4:2:2", 3, 2, 1}, {"4:2:0", 3, 2, 2}, {"gray", 1, 1, 1}};

std::vector<unsigned char> photo_jpeg(const Shape& s, int w, int h, std::uint32_t seed, int quality = 90) {
  const Image img = make_test_image(w, h, Format{PixelType::U8, s.channels}, seed, Pattern::Photo);
  test::JpegShape shape;
  shape.quality = quality;
  shape.h_samp = s.h_samp;
  shape.v_samp = s.v_samp;
  return test::libjpeg_encode(img.view(), shape);
}

TEST(GpuJpeg, DecodeWithinTwoOfLibjpegTurbo) {
  TF_REQUIRE_GPU_JPEG();
  auto l = lane();
  for (const Shape& s : kShapes)
    for (auto [w, h] : {std::pair{1001, 667}, std::pair{640, 480}, std::pair{333, 221}}) {
      SCOPED_TRACE(fmt::format("{} {}x{}", s.name, w, h));
      const auto jpeg = photo_jpeg(s, w, h, test::test_seed(900 + w));
      const Image cpu = decode_memory(jpeg, "cpu.jpg");
      const Image gpu = gpu_decode(*l, jpeg);
      ASSERT_EQ(cpu.format(), gpu.format());
      ASSERT_EQ(cpu.width(), gpu.width());
      ASSERT_EQ(cpu.height(), gpu.height());
      int worst = 0;
      std::size_t off = 0, n = 0;
      for (int y = 0; y < h; ++y) {
        const auto* a = reinterpret_cast<const unsigned char*>(cpu.view().row(y));
        const auto* b = reinterpret_cast<const unsigned char*>(gpu.view().row(y));
        for (int i = 0; i < w * s.channels; ++i, ++n) {
          const int d = std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i]));
          worst = std::max(worst, d);
          off += d != 0;
        }
      }
      std::cout << fmt::format("[gpu-jpeg] {} {}x{}: max |nvJPEG - libjpeg-turbo| = {}, {:.2f}% of samples differ\n",
                               s.name, w, h, worst, 100.0 * static_cast<double>(off) / static_cast<double>(n));
      EXPECT_LE(worst, 2);
    }
}

TEST(GpuJpeg, FilterEqualsTheCpuBackendOnTheSameDecodedPixels) {
  TF_REQUIRE_GPU_JPEG();
  auto l = lane();
  const std::vector<std::pair<std::string, Chain>> chains = {
      {"gaussian:sigma=2", parse_chain({"gaussian:sigma=2"})},
      {"unsharp + sharpen", parse_chain({"unsharp:sigma=3,amount=0.8", "sharpen:amount=0.5"})},
      {"box:radius=200", parse_chain({"box:radius=200"})},
      {"2-D 7x5", Chain{random_kernel_stage(7, 5, 17)}},
  };
  const BorderMode modes[] = {BorderMode::Reflect101, BorderMode::Replicate, BorderMode::Constant, BorderMode::Reflect};
  int k = 0;
  for (const Shape& s : {kShapes[2], kShapes[3], kShapes[0]})
    for (const auto& [name, chain] : chains) {
      const BorderMode mode = modes[k++ % 4];
      const Border border{mode, 37.0f};
      SCOPED_TRACE(fmt::format("{} {} border {}", s.name, name, to_string(mode)));
      const auto jpeg = photo_jpeg(s, 517, 389, test::test_seed(950 + k));
      const Image decoded = gpu_decode(*l, jpeg);
      const Image filtered = gpu_decode(*l, jpeg, &chain, border);
      EXPECT_TRUE(same_bits(cpu_reference(decoded, chain, border), filtered));
    }
}

TEST(GpuJpeg, SameBitsOnEveryRunAndLane) {
  TF_REQUIRE_GPU_JPEG();
  auto a = lane(), b = lane();
  const Chain chain = parse_chain({"gaussian:sigma=1.5"});
  for (const Shape& s : kShapes) {
    const auto jpeg = photo_jpeg(s, 800, 600, test::test_seed(960));
    GpuJpegJob job;
    job.jpeg = jpeg;
    job.name = "same.jpg";
    job.chain = &chain;
    const GpuJpegResult first = a->run(job), again = a->run(job), other = b->run(job);
    EXPECT_EQ(first.jpeg, again.jpeg) << s.name;
    EXPECT_EQ(first.jpeg, other.jpeg) << s.name;
    EXPECT_TRUE(same_bits(gpu_decode(*a, jpeg, &chain), gpu_decode(*b, jpeg, &chain))) << s.name;
  }
}

TEST(GpuJpeg, EncodedStreamHoldsTheFilteredPixels) {
  TF_REQUIRE_GPU_JPEG();
  auto l = lane();
  const Chain chain = parse_chain({"gaussian:sigma=1.5"});
  for (const Shape& s : {kShapes[0], kShapes[3]})
    for (int quality : {95, 80}) {
      SCOPED_TRACE(fmt::format("{} quality {}", s.name, quality));
      const auto jpeg = photo_jpeg(s, 701, 403, test::test_seed(970));
      GpuJpegJob job;
      job.jpeg = jpeg;
      job.name = "enc.jpg";
      job.chain = &chain;
      job.quality = quality;
      const GpuJpegResult out = l->run(job);
      EXPECT_EQ(out.encoder, "nvjpeg");
      const JpegStreamInfo info = jpeg_stream_info(out.jpeg, "enc.jpg");
      EXPECT_EQ(info.width, 701);
      EXPECT_EQ(info.height, 403);
      EXPECT_EQ(info.components, s.channels);
      const Image back = decode_memory(out.jpeg, "enc.jpg");
      const Image filtered = gpu_decode(*l, jpeg, &chain);
      const test::Difference d = test::compare(back.view(), filtered.view());
      double sum = 0;
      std::size_t n = 0;
      for (int y = 0; y < back.height(); ++y)
        for (std::size_t i = 0; i < back.view().row_bytes(); ++i, ++n)
          sum += std::abs(static_cast<int>(reinterpret_cast<const unsigned char*>(back.view().row(y))[i]) -
                          static_cast<int>(reinterpret_cast<const unsigned char*>(filtered.view().row(y))[i]));
      std::cout << fmt::format("[gpu-jpeg] encode {} q{}: {} bytes, max {} mean {:.3f} against the pixels\n", s.name,
                               quality, out.jpeg.size(), d.max_abs, sum / static_cast<double>(n));
      EXPECT_LT(sum / static_cast<double>(n), quality >= 90 ? 1.5 : 3.0);
    }
}

TEST(GpuJpeg, BadAndUnsupportedStreamsAreRefusedAndTheLaneGoesOn) {
  TF_REQUIRE_GPU_JPEG();
  auto l = lane();
  const auto good = photo_jpeg(kShapes[2], 300, 200, test::test_seed(980));
  const Image expected = gpu_decode(*l, good);
  const std::vector<unsigned char> garbage(5000, 0x5A);
  const std::vector<unsigned char> header_only(good.begin(), good.begin() + 300);
  const Image img = make_test_image(300, 200, Format{PixelType::U8, 3}, 3, Pattern::Photo);
  test::JpegShape progressive;
  progressive.progressive = true;
  const auto prog = test::libjpeg_encode(img.view(), progressive);
  for (const auto* bad : {&garbage, &header_only, &prog}) {
    try {
      (void)gpu_decode(*l, *bad);
      if (bad != &header_only) ADD_FAILURE() << "a bad stream was decoded";
    } catch (const Error& e) {
      std::cout << "[gpu-jpeg] refused: " << e.what() << "\n";
      if (bad == &prog) EXPECT_NE(std::string(e.what()).find("progressive"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(same_bits(expected, gpu_decode(*l, good)));
  }
}

// Several files in one call (the hardware decoder spreads them over its engines): each outcome is
// the file's own, in order, with the bits a call of its own gives; a bad file fails alone.
TEST(GpuJpeg, ABatchGivesEachFileItsOwnOutcome) {
  TF_REQUIRE_GPU_JPEG();
  auto l = lane();
  const Chain chain = parse_chain({"gaussian:sigma=2"});
  const Image img = make_test_image(280, 190, Format{PixelType::U8, 3}, 5, Pattern::Photo);
  test::JpegShape progressive;
  progressive.progressive = true;
  const std::vector<std::vector<unsigned char>> files = {photo_jpeg(kShapes[0], 640, 480, test::test_seed(1010)),
                                                         photo_jpeg(kShapes[3], 333, 500, test::test_seed(1011)),
                                                         test::libjpeg_encode(img.view(), progressive),
                                                         std::vector<unsigned char>(3000, 0x33),
                                                         photo_jpeg(kShapes[2], 1001, 667, test::test_seed(1012)),
                                                         photo_jpeg(kShapes[1], 517, 389, test::test_seed(1013)),
                                                         photo_jpeg(kShapes[2], 64, 48, test::test_seed(1014))};
  for (bool encode : {false, true}) {
    std::vector<GpuJpegJob> jobs(files.size());
    for (std::size_t k = 0; k < files.size(); ++k) {
      jobs[k].jpeg = files[k];
      jobs[k].name = fmt::format("f{}.jpg", k);
      jobs[k].chain = &chain;
      jobs[k].encode = encode;
    }
    const std::vector<GpuJpegOutcome> out = l->run_batch(jobs);
    ASSERT_EQ(out.size(), files.size());
    for (std::size_t k = 0; k < files.size(); ++k) {
      SCOPED_TRACE(fmt::format("file {} encode {}", k, encode));
      if (k == 2 || k == 3) {
        EXPECT_FALSE(out[k].error.empty());
        EXPECT_NE(out[k].error.find(jobs[k].name), std::string::npos) << out[k].error;
        continue;
      }
      ASSERT_TRUE(out[k].error.empty()) << out[k].error;
      const GpuJpegResult alone = l->run(jobs[k]);
      if (encode) EXPECT_EQ(out[k].result.jpeg, alone.jpeg);
      else EXPECT_TRUE(same_bits(alone.pixels, out[k].result.pixels));
      std::cout << fmt::format("[gpu-jpeg] batch of {}: file {} by {}\n", files.size(), k, out[k].result.decoder);
    }
  }
}

// The batch worker's way (pipeline_gpu.cpp): one thread begins each batch while another ends the one
// before, a third batch waiting for the first's buffers. Every file comes out as run_batch gives it alone, the
// bytes overwritten once begin_batch has returned where the lane says it is done with them.
TEST(GpuJpeg, HalvesOnTwoThreadsGiveWhatRunBatchGives) {
  TF_REQUIRE_GPU_JPEG();
  auto l = lane(), reference = lane();
  const Chain chain = parse_chain({"gaussian:sigma=1.5"});
  constexpr int kBatches = 7;
  std::vector<std::vector<std::vector<unsigned char>>> files(kBatches);
  std::vector<std::vector<GpuJpegJob>> jobs(kBatches);
  for (int b = 0; b < kBatches; ++b)
    for (int k = 0; k < 2 + b % 3; ++k) {
      const Shape& s = kShapes[(b + k) % 4];
      files[b].push_back(photo_jpeg(s, 320 + 64 * b + k, 200 + 31 * k, test::test_seed(1100 + 10 * b + k)));
    }
  for (int b = 0; b < kBatches; ++b)
    for (std::size_t k = 0; k < files[b].size(); ++k) {
      GpuJpegJob job;
      job.jpeg = files[b][k];
      job.name = fmt::format("b{}f{}.jpg", b, k);
      job.chain = &chain;
      job.encode = (b + k) % 2 == 0;
      jobs[b].push_back(std::move(job));
    }
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::unique_ptr<GpuJpegPending>> begun;
  std::vector<std::vector<GpuJpegOutcome>> out(kBatches);
  std::thread ender([&] {
    for (int b = 0; b < kBatches; ++b) {
      std::unique_ptr<GpuJpegPending> p;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return !begun.empty(); });
        p = std::move(begun.front());
        begun.pop_front();
      }
      out[b] = l->end_batch(std::move(p));
    }
  });
  const auto originals = files;
  for (int b = 0; b < kBatches; ++b) {
    auto p = l->begin_batch(jobs[b]);
    // A lane done with the bytes at begin_batch may have them overwritten at once (the batch reuses them).
    if (l->done_with_bytes_at_begin())
      for (auto& f : files[b]) std::fill(f.begin(), f.end(), static_cast<unsigned char>(0x5a));
    std::lock_guard lock(mutex);
    begun.push_back(std::move(p));
    changed.notify_all();
  }
  ender.join();
  int on_hardware = 0;
  for (int b = 0; b < kBatches; ++b) {
    ASSERT_EQ(out[b].size(), jobs[b].size());
    for (std::size_t k = 0; k < jobs[b].size(); ++k) {
      SCOPED_TRACE(jobs[b][k].name);
      ASSERT_TRUE(out[b][k].error.empty()) << out[b][k].error;
      GpuJpegJob job = jobs[b][k];
      job.jpeg = originals[b][k];
      const GpuJpegResult alone = reference->run(job);
      if (jobs[b][k].encode) EXPECT_EQ(out[b][k].result.jpeg, alone.jpeg);
      else EXPECT_TRUE(same_bits(alone.pixels, out[b][k].result.pixels));
      on_hardware += out[b][k].result.decoder == "nvjpeg-hardware";
    }
  }
  std::cout << fmt::format("[ note     ] {} of the files decoded on the hardware decoder\n", on_hardware);
}

TEST(GpuJpeg, AThousandFilesWithoutDeviceMemoryGrowth) {
  TF_REQUIRE_GPU_JPEG();
  auto l = lane();
  const Chain chain = parse_chain({"gaussian:sigma=2", "sharpen"});
  std::vector<std::vector<unsigned char>> files;
  for (int i = 0; i < 8; ++i)
    files.push_back(
        photo_jpeg(kShapes[static_cast<std::size_t>(i) % 4], 320 + 41 * i, 240 + 23 * i, test::test_seed(990 + i)));
  auto run = [&](int i) {
    GpuJpegJob job;
    job.jpeg = files[static_cast<std::size_t>(i) % files.size()];
    job.name = "soak.jpg";
    job.chain = &chain;
    job.encode = i % 3 != 0;
    (void)l->run(job);
  };
  for (int i = 0; i < 50; ++i) run(i);
  std::size_t free0 = 0, free1 = 0, total = 0;
  ASSERT_EQ(cudaSetDevice(gpus().front()->info().ordinal), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  const std::size_t held = l->reserved_bytes();
  for (int i = 50; i < 1000; ++i) run(i);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  const double grew = (static_cast<double>(free0) - static_cast<double>(free1)) / 1048576.0;
  std::cout << fmt::format("[gpu-jpeg] soak: device memory {:+.1f} MiB over 950 files, lane holds {:.1f} MiB\n", grew,
                           held / 1048576.0);
  EXPECT_LT(grew, 16.0);
  EXPECT_EQ(l->reserved_bytes(), held);
}

TEST(GpuJpeg, BatchSendsWhatTheGpuCannotTakeToTheCpu) {
  TF_REQUIRE_GPU_JPEG();
  test::TempDir dir;
  fs::create_directories(dir / "in");
  test::write_bytes(dir / "in/a444.jpg", photo_jpeg(kShapes[0], 900, 700, test::test_seed(1001)));
  test::write_bytes(dir / "in/b420.jpg", photo_jpeg(kShapes[2], 1201, 803, test::test_seed(1002)));
  test::write_bytes(dir / "in/c_gray.jpg", photo_jpeg(kShapes[3], 640, 480, test::test_seed(1003)));
  const Image img = make_test_image(400, 300, Format{PixelType::U8, 3}, 4, Pattern::Photo);
  test::JpegShape progressive;
  progressive.progressive = true;
  test::write_bytes(dir / "in/d_prog.jpg", test::libjpeg_encode(img.view(), progressive));
  auto cut = photo_jpeg(kShapes[2], 500, 400, test::test_seed(1004));
  cut.resize(cut.size() / 2);
  test::write_bytes(dir / "in/e_cut.jpg", cut);
  // Metadata travels into the GPU encoder's stream.
  Metadata md;
  md.orientation = 6;
  md.xmp = "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\">gpu codec test</x:xmpmeta>";
  EncodeOptions eo;
  eo.quality = 92;
  encode_file(dir / "in/f_meta.jpg", img.view(), eo, md);

  BatchOptions o;
  o.input_dir = dir / "in";
  o.filters = {"gaussian:sigma=1.5"};
  o.device_list = gpus();
  o.codec = CodecChoice::Gpu;
  o.output_dir = dir / "gpu";
  const BatchReport gpu = run_batch(o);
  o.codec = CodecChoice::Cpu;
  o.output_dir = dir / "cpu";
  const BatchReport cpu = run_batch(o);
  EXPECT_GT(gpu.gpu_codec_lanes, 0);
  EXPECT_EQ(cpu.gpu_codec_lanes, 0);
  for (std::size_t i = 0; i < gpu.files.size(); ++i) {
    const FileResult& f = gpu.files[i];
    const std::string name = fs::path(f.input).filename().string();
    SCOPED_TRACE(name + ": " + f.reason + " " + f.codec_note);
    if (name == "e_cut.jpg") {
      EXPECT_EQ(f.status, FileResult::Status::Failed);
      EXPECT_EQ(cpu.files[i].status, FileResult::Status::Failed);
      continue;
    }
    ASSERT_EQ(f.status, FileResult::Status::Ok);
    if (name == "d_prog.jpg") {
      EXPECT_FALSE(f.decoder.starts_with("nvjpeg"));
      EXPECT_NE(f.codec_note.find("progressive"), std::string::npos);
    } else {
      EXPECT_TRUE(f.decoder.starts_with("nvjpeg")) << f.decoder;
      EXPECT_EQ(f.encoder, "nvjpeg");
    }
    ImageInfo info;
    const Image a = decode_file(f.output, {}, default_allocator(), &info);
    const Image b = decode_file(cpu.files[i].output);
    const test::Difference d = test::compare(a.view(), b.view());
    std::cout << fmt::format("[gpu-jpeg] batch {} ({} / {}): max {} against --codec cpu\n", name, f.decoder, f.encoder,
                             d.max_abs);
    EXPECT_LE(d.max_abs, 48.0);  // two different JPEG encoders' losses; the mean is what matters
    // Written like its input: its quality (nvJPEG's tables may round one step off libjpeg's) and subsampling.
    const JpegCoding in = open_image(f.input)->info().jpeg, out_gpu = info.jpeg;
    const JpegCoding out_cpu = open_image(cpu.files[i].output)->info().jpeg;
    EXPECT_NEAR(out_gpu.quality, in.quality, 1) << "gpu";
    EXPECT_EQ(out_cpu.quality, in.quality) << "cpu";
    EXPECT_EQ(out_gpu.subsampling, in.subsampling) << "gpu";
    EXPECT_EQ(out_cpu.subsampling, in.subsampling) << "cpu";
    if (name == "f_meta.jpg") {
      EXPECT_EQ(info.metadata.orientation, 6);
      EXPECT_EQ(info.metadata.xmp, md.xmp);
    }
  }
}

// Issue 36: a GPU codec lane that comes late, or never, changes no output bit. Photos into PNGs (so
// the encoder is the same whichever codec decoded them): lanes on time (--codec gpu), 400 ms late
// (--codec gpu waits for them), never ready (--codec auto: the CPU codecs take every file, and the
// batch does not wait), against --codec cpu. nvJPEG's decoder matched libjpeg-turbo's on every
// sample of these subsamplings (DecodeWithinTwoOfLibjpegTurbo prints it), so all four are one set of bits.
TEST(GpuJpeg, ALateOrNeverReadyLaneChangesNoOutputBit) {
  TF_REQUIRE_GPU_JPEG();
  test::TempDir dir;
  fs::create_directories(dir / "in");
  for (int i = 0; i < 12; ++i)
    test::write_bytes(dir / fmt::format("in/p{:02}.jpg", i),
                      photo_jpeg(kShapes[i % 4], 301 + 97 * i, 203 + 61 * i, test::test_seed(1100 + i)));
  BatchOptions o;
  o.input_dir = dir / "in";
  o.filters = {"gaussian:sigma=1.5", "sharpen"};
  o.device_list = gpus();
  o.format = "png";
  struct Run {
    const char* name;
    CodecChoice codec;
    int delay_ms;
  };
  const Run runs[] = {{"cpu", CodecChoice::Cpu, 0},
                      {"gpu", CodecChoice::Gpu, 0},
                      {"gpu_late", CodecChoice::Gpu, 400},
                      {"auto_never", CodecChoice::Auto, -1}};
  std::vector<BatchReport> reports;
  for (const Run& r : runs) {
    o.codec = r.codec;
    o.job.faults.codec_lane_delay_ms = r.delay_ms;
    o.output_dir = dir / r.name;
    reports.push_back(run_batch(o));
    const BatchReport& rep = reports.back();
    int on_gpu = 0;
    for (const FileResult& f : rep.files) {
      ASSERT_EQ(f.status, FileResult::Status::Ok) << r.name << " " << f.input << ": " << f.reason;
      on_gpu += f.decoder.starts_with("nvjpeg");
    }
    std::cout << fmt::format("[gpu-jpeg] {}: {} of {} files decoded by nvJPEG, {:.3f} s\n", r.name, on_gpu,
                             rep.files.size(), rep.wall_s);
    if (r.codec == CodecChoice::Gpu) EXPECT_EQ(on_gpu, static_cast<int>(rep.files.size())) << r.name;
    if (r.delay_ms < 0) EXPECT_EQ(on_gpu, 0) << r.name;
  }
  for (std::size_t i = 0; i < reports[0].files.size(); ++i) {
    const Image want = decode_file(reports[0].files[i].output);
    for (std::size_t r = 1; r < reports.size(); ++r) {
      const FileResult* f = nullptr;
      for (const FileResult& g : reports[r].files)
        if (fs::path(g.input).filename() == fs::path(reports[0].files[i].input).filename()) f = &g;
      ASSERT_NE(f, nullptr);
      const test::Difference d = test::compare(want.view(), decode_file(f->output).view());
      EXPECT_EQ(d.max_abs, 0.0) << runs[r].name << " " << f->input;
    }
  }
}

}  // namespace
}  // namespace tf::gputest
