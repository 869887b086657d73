// Streaming apply (filter_file): band by band equals the whole image at once, bit for bit, for
// every streaming format, border and band height; memory stays within the budget; bad input and
// failures leave nothing under the output's name.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "io/metadata.hpp"
#include "test_support.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/io/stream.hpp"
#include "tilefilter/util/error.hpp"

namespace fs = std::filesystem;

namespace tf {
namespace {

std::vector<DevicePtr> cpu(int workers) { return select_devices(fmt::format("cpu:{}", workers)).devices; }

Image whole_reference(const std::string& input, const Chain& chain, const JobOptions& job) {
  return filter_image(decode_file(input), chain, cpu(1), job);
}

StreamReport stream(const std::string& in, const std::string& out, const Chain& chain, int band_rows,
                    const JobOptions& job = {}, int workers = 2) {
  StreamOptions o;
  o.band_rows = band_rows;
  return filter_file(in, out, chain, cpu(workers), job, o);
}

bool leftovers(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp") != std::string::npos) return true;
  return false;
}

struct Case {
  const char* ext;
  Format format;
};

class StreamEqualsWhole : public ::testing::TestWithParam<Case> {};

TEST_P(StreamEqualsWhole, EveryBandHeightAndBorder) {
  const auto [ext, format] = GetParam();
  test::TempDir dir;
  const std::string in = dir / (std::string("in") + ext);
  const std::uint32_t seed = test::test_seed(11);
  encode_file(in, test::random_image(97, 83, format, seed).view());
  const Chain chain = parse_chain({"gaussian:sigma=2", "sharpen"});
  for (BorderMode mode : {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Constant}) {
    JobOptions job;
    job.border = {mode, 0.25f};
    const Image expected = whole_reference(in, chain, job);
    for (int rows : {1, 7, 16, 40, 83}) {
      const std::string out = dir / fmt::format("out{}{}", rows, ext);
      const StreamReport r = stream(in, out, chain, rows, job);
      SCOPED_TRACE(
          fmt::format("{} {} border {} bands of {} rows", ext, to_string(format), static_cast<int>(mode), rows));
      if (open_image(in)->info().access != RowAccess::Whole) EXPECT_EQ(r.bands, (83 + r.band_rows - 1) / r.band_rows);
      if (std::string(ext) == ".jpg") {
        // Lossy output: the same encoder over the same pixels gives the same bytes.
        const std::string whole_out = dir / (std::string("whole") + ext);
        encode_file(whole_out, expected.view());
        EXPECT_TRUE(same_pixels(decode_file(out).view(), decode_file(whole_out).view()));
      } else {
        EXPECT_TRUE(same_pixels(decode_file(out).view(), expected.view()));
      }
    }
  }
  EXPECT_FALSE(leftovers(dir.path));
}

std::vector<Case> streaming_cases() {
  std::vector<Case> v;
  for (int c : {1, 3, 4}) {
    v.push_back({".png", {PixelType::U8, c}});
    v.push_back({".tif", {PixelType::U8, c}});
  }
  v.push_back({".png", {PixelType::U16, 3}});
  v.push_back({".tif", {PixelType::U16, 1}});
  v.push_back({".tif", {PixelType::F32, 3}});
  v.push_back({".tif", {PixelType::F32, 4}});
  v.push_back({".jpg", {PixelType::U8, 3}});
  v.push_back({".jpg", {PixelType::U8, 1}});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Formats, StreamEqualsWhole, ::testing::ValuesIn(streaming_cases()), [](const auto& info) {
  return fmt::format("{}_{}c_{}", info.param.ext + 1, info.param.format.channels, to_string(info.param.format.type));
});

TEST(StreamApply, TiledTiffInputAndOutputEqualWhole) {
  if (!writer_streams("x.tif")) GTEST_SKIP() << "no libtiff in this build";
  test::TempDir dir;
  const std::string in = dir / "tiled.tif";
  WriteOptions tiles;
  tiles.tiff_tile = {32, 16};
  encode_file(in, test::random_image(150, 77, Format{PixelType::U8, 3}, 5).view(), tiles);
  const Chain chain = parse_chain({"box:radius=3"});
  const Image expected = whole_reference(in, chain, {});
  StreamOptions o;
  o.band_rows = 13;
  o.write.tiff_tile = {16, 32};
  filter_file(in, dir / "out.tif", chain, cpu(2), {}, o);
  EXPECT_TRUE(same_pixels(decode_file(dir / "out.tif").view(), expected.view()));
}

// A caller's allocator holds the bands and their windows (a batch recycles them from file to file): every
// buffer it gave is given back, and the bits are those of the default allocator's run.
TEST(StreamApply, BandsComeFromTheCallersAllocator) {
  test::TempDir dir;
  const std::string in = dir / "in.png";
  encode_file(in, test::random_image(211, 97, Format{PixelType::U8, 3}, 41).view());
  const Chain chain = parse_chain({"gaussian:sigma=2"});
  std::mutex mutex;
  int given = 0, back = 0;
  PixelAllocator counting{[&](std::size_t n) {
                            std::lock_guard lock(mutex);
                            ++given;
                            return default_allocator().allocate(n);
                          },
                          [&](void* p) {
                            {
                              std::lock_guard lock(mutex);
                              ++back;
                            }
                            default_allocator().release(p);
                          }};
  StreamOptions o;
  o.band_rows = 17;
  o.allocator = &counting;
  const StreamReport r = filter_file(in, dir / "a.png", chain, cpu(2), {}, o);
  EXPECT_GT(r.bands, 1);
  EXPECT_EQ(given, 4) << "two windows and two bands";
  EXPECT_EQ(back, given);
  stream(in, dir / "b.png", chain, 17);
  EXPECT_TRUE(same_pixels(decode_file(dir / "a.png").view(), decode_file(dir / "b.png").view()));
}

TEST(StreamApply, WrapBorderRunsInOneBandWithANote) {
  test::TempDir dir;
  const std::string in = dir / "in.png";
  encode_file(in, test::random_image(64, 48, Format{PixelType::U8, 3}, 3).view());
  JobOptions job;
  job.border = {BorderMode::Wrap, 0};
  const Chain chain = parse_chain({"gaussian:sigma=1.5", "box:radius=2"});
  const StreamReport r = stream(in, dir / "out.png", chain, 8, job);
  EXPECT_EQ(r.bands, 1);
  EXPECT_NE(r.note.find("wrap"), std::string::npos) << r.note;
  EXPECT_TRUE(same_pixels(decode_file(dir / "out.png").view(), whole_reference(in, chain, job).view()));
}

TEST(StreamApply, FormatsThatCannotStreamGoInOneBand) {
  test::TempDir dir;
  const std::string in = dir / "in.bmp";
  encode_file(in, test::random_image(40, 30, Format{PixelType::U8, 3}, 4).view());
  const Chain chain = parse_chain({"sharpen"});
  const StreamReport r = stream(in, dir / "out.png", chain, 4);
  EXPECT_EQ(r.bands, 1);
  EXPECT_TRUE(same_pixels(decode_file(dir / "out.png").view(), whole_reference(in, chain, {}).view()));
}

TEST(StreamApply, CutInputFailsAndLeavesNoOutput) {
  test::TempDir dir;
  for (const char* ext : {".png", ".tif", ".jpg"}) {
    if (!writer_streams(std::string("x") + ext)) continue;
    const std::string in = dir / (std::string("big") + ext), out = dir / (std::string("out") + ext);
    WriteOptions none;
    none.compression = "none";
    encode_file(in, test::random_image(300, 200, Format{PixelType::U8, 3}, 6).view(), none);
    fs::resize_file(in, fs::file_size(in) * 2 / 3);
    EXPECT_THROW(stream(in, out, parse_chain({"sharpen"}), 16), Error) << ext;
    EXPECT_FALSE(fs::exists(out)) << ext;
  }
  EXPECT_FALSE(leftovers(dir.path));
}

TEST(StreamApply, AutorotateTurnsThePixelsUpright) {
  const Image src = test::random_image(5, 3, Format{PixelType::U8, 1}, 8);
  const Image r6 = apply_orientation(src.view(), 6);  // 90 degrees clockwise
  ASSERT_EQ(r6.width(), 3);
  ASSERT_EQ(r6.height(), 5);
  // The stored image's bottom-left pixel is the viewer's top-left one.
  EXPECT_EQ(r6.view().row(0)[0], src.view().row(2)[0]);
  EXPECT_EQ(r6.view().row(0)[2], src.view().row(0)[0]);
  const Image back = apply_orientation(apply_orientation(r6.view(), 6).view(), 3);  // 90 + 90 + 180 degrees
  EXPECT_TRUE(same_pixels(back.view(), src.view()));
  for (int o = 2; o <= 8; ++o) EXPECT_FALSE(same_pixels(apply_orientation(src.view(), o).view(), src.view())) << o;
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
long proc_status_kib(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::strlen(key)));
  return -1;
}
#endif

TEST(StreamApply, PeakMemoryStaysWithinTheBudget) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "resident memory is not meaningful under a sanitizer";
#else
  if (!writer_streams("x.tif")) GTEST_SKIP() << "no libtiff in this build";
  test::TempDir dir;
  const std::string in = dir / "big.tif";
  // 6000 x 4000 RGB8: 72 MB of pixels, written band by band so the test itself stays small.
  const int w = 6000, h = 4000;
  {
    auto writer = create_image(in, w, h, Format{PixelType::U8, 3}, {}, {});
    Image band(w, 250, Format{PixelType::U8, 3});
    for (int y = 0; y < h; y += 250) {
      fill_test_rows(band.view(), y, h, 9, Pattern::Chart);
      writer->write_rows(band.view());
    }
    writer->finish();
  }
  // Room for the codecs' per-core strip buffers, which the budget pays first (3 MiB a core).
  const std::size_t budget = (40ULL << 20) + (3ULL << 20) * std::max(1U, std::thread::hardware_concurrency());
  StreamOptions o;
  o.memory_budget = budget;
  {  // reset the high-water mark (Linux: clear_refs 5), then measure from here
    std::ofstream("/proc/self/clear_refs") << "5";
  }
  const long base_kib = proc_status_kib("VmRSS:");
  const StreamReport r = filter_file(in, dir / "out.tif", parse_chain({"gaussian:sigma=3"}), cpu(2), {}, o);
  const long peak_kib = proc_status_kib("VmHWM:");
  ASSERT_GT(base_kib, 0);
  ASSERT_GT(peak_kib, 0);
  const double grew_mib = (peak_kib - base_kib) / 1024.0;
  // Stated overhead beyond the budget: thread stacks, allocator slack, libtiff's own strip buffers.
  const double overhead_mib = 16;
  RecordProperty("peak_growth_mib", std::to_string(grew_mib));
  EXPECT_GT(r.bands, 4);
  EXPECT_LE(grew_mib, budget / 1048576.0 + overhead_mib)
      << "image " << w * h * 3 / 1048576 << " MiB, " << r.bands << " bands of " << r.band_rows << " rows";
#endif
}

// The codecs' reserve grows with the cores only where they run a worker per core (TIFF, the PNG
// writer): a JPEG's reader and writer are one thread each, so a JPEG-to-JPEG file keeps 8 MiB for
// them on any machine. (With the per-core reserve a batch's 16-MiB file had bands of 22 rows on 64
// cores, the least its halo allows.)
TEST(StreamFile, OneThreadCodecsReserveTheSameOnEveryMachine) {
  const Format rgb8{PixelType::U8, 3};
  const Halo halo{5, 5, 5, 5};
  // (16 MiB - 8 MiB) / 12000-byte rows, less two windows' halo rows, over two windows and two bands.
  EXPECT_EQ(band_rows_for_budget(4000, 3000, rgb8, halo, 16 << 20, false), ((8 << 20) / 12000 - 20) / 4);
  EXPECT_LT(band_rows_for_budget(4000, 3000, rgb8, halo, 16 << 20, true),
            band_rows_for_budget(4000, 3000, rgb8, halo, 16 << 20, false));

  test::TempDir dir;
  const std::string in = dir / "in.jpg";
  encode_file(in, test::random_image(1200, 700, rgb8, test::test_seed(23)).view());
  StreamOptions o;
  o.memory_budget = 16 << 20;
  const Chain chain = parse_chain({"gaussian:sigma=1.5"});
  const StreamReport jpeg = filter_file(in, dir / "out.jpg", chain, cpu(1), {}, o);
  const StreamReport tiff = filter_file(in, dir / "out.tif", chain, cpu(1), {}, o);
  EXPECT_GT(jpeg.band_rows, tiff.band_rows) << "the TIFF writer's per-core strips come out of the same budget";
  EXPECT_GE(jpeg.band_rows, 200) << "16 MiB less 8 for the codecs leave room for hundreds of 3600-byte rows";
}

}  // namespace
}  // namespace tf

namespace tf {
namespace {

// An ICC header that libpng's checks accept (size, 'acsp', RGB data, XYZ connection space, an
// empty tag table) and a random tail, so a lost or altered byte shows.
std::vector<unsigned char> minimal_rgb_icc_profile() {
  std::vector<unsigned char> p(132 + 64, 0);
  auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) p[at + i] = static_cast<unsigned char>(v >> (24 - 8 * i));
  };
  auto put4 = [&](std::size_t at, const char* s) { std::memcpy(&p[at], s, 4); };
  put32(0, static_cast<std::uint32_t>(p.size()));
  put32(8, 0x02100000);  // version 2.1
  put4(12, "mntr");
  put4(16, "RGB ");
  put4(20, "XYZ ");
  put4(36, "acsp");
  put32(68, 0x0000F6D6);  // D50 illuminant X, Y, Z in s15Fixed16
  put32(72, 0x00010000);
  put32(76, 0x0000D32D);
  put32(128, 0);  // no tags
  for (std::size_t i = 132; i < p.size(); ++i) p[i] = static_cast<unsigned char>(i * 37 + 11);
  return p;
}

// What a user sees: `tilefilter apply` keeps EXIF, ICC and XMP from input to output in every
// format that holds them, --strip drops them, --autorotate turns the pixels and resets the tag.
TEST(StreamApply, MetadataTravelsThroughApply) {
  if (!writer_streams("x.jpg") || !writer_streams("x.png") || !writer_streams("x.tif"))
    GTEST_SKIP() << "needs libjpeg, libpng and libtiff";
  test::TempDir dir;
  Metadata md;
  io::Ifd0Text text;
  text.artist = "A. Photographer";
  text.make = "TileFilter";
  md.exif = io::exif_from_ifd0_text(text, 6);
  md.orientation = 6;
  md.icc = minimal_rgb_icc_profile();
  md.xmp = "<x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF/></x:xmpmeta>";
  const std::string in = dir / "phone.jpg";
  encode_file(in, test::random_image(64, 40, Format{PixelType::U8, 3}, 12).view(), quality_only(90), md);
  for (const char* ext : {".jpg", ".png", ".tif"}) {
    SCOPED_TRACE(ext);
    const std::string out = dir / (std::string("kept") + ext);
    ASSERT_EQ(test::run_cli(fmt::format("apply {} {} -f sharpen --devices cpu:1 -q", in, out)), 0);
    const ImageInfo info = open_image(out)->info();
    EXPECT_EQ(info.metadata.orientation, 6);
    EXPECT_EQ(info.metadata.icc, md.icc);
    EXPECT_NE(info.metadata.xmp.find("xmpmeta"), std::string::npos);
    EXPECT_EQ(io::exif_ifd0_text(info.metadata.exif).artist, "A. Photographer");
    EXPECT_EQ(info.width, 64);  // pixels as stored: the tag still turns them in a viewer

    const std::string stripped = dir / (std::string("stripped") + ext);
    ASSERT_EQ(test::run_cli(fmt::format("apply {} {} -f sharpen --devices cpu:1 -q --strip", in, stripped)), 0);
    EXPECT_TRUE(open_image(stripped)->info().metadata.empty());

    const std::string upright = dir / (std::string("upright") + ext);
    ASSERT_EQ(test::run_cli(fmt::format("apply {} {} -f sharpen --devices cpu:1 -q --autorotate", in, upright)), 0);
    const ImageInfo u = open_image(upright)->info();
    EXPECT_EQ(u.width, 40);
    EXPECT_EQ(u.height, 64);
    EXPECT_EQ(u.metadata.orientation, 1);
    EXPECT_EQ(u.metadata.icc, md.icc);
  }
}

}  // namespace
}  // namespace tf
