// Overviews from reduced reads (core/src/io/overview.cpp): TIFF pyramid levels of both kinds (reduced-
// resolution pages, SubIFDs) written here by libtiff, levels that lie or break (ignored, the full
// image averaged instead), JPEG DCT scaling against the full decode's box average (4:2:0, gray,
// progressive), and the parallel average against a serial one and a naive one, with progress and
// cancel, through a reader that makes its pixels up as it goes (several bands without large files).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "jpeg_maker.hpp"
#include "test_support.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/io/overview.hpp"
#include "tilefilter/util/error.hpp"

#ifdef TF_HAVE_LIBTIFF
#include <tiffio.h>
#endif

namespace tf {
namespace {

using test::random_image;
using test::TempDir;

// The box average the contract describes, sample by sample in double: boxes of `f` (the last ones
// what is left), integers rounded to nearest.
template <class T> Image naive_overview(const ImageView& src, int f) {
  const int ow = (src.width + f - 1) / f, oh = (src.height + f - 1) / f, ch = src.format.channels;
  Image out(ow, oh, src.format);
  for (int oy = 0; oy < oh; ++oy)
    for (int ox = 0; ox < ow; ++ox)
      for (int c = 0; c < ch; ++c) {
        double s = 0;
        int n = 0;
        for (int y = oy * f; y < std::min(src.height, (oy + 1) * f); ++y)
          for (int x = ox * f; x < std::min(src.width, (ox + 1) * f); ++x, ++n) s += src.row_as<const T>(y)[x * ch + c];
        T& d = out.view().row_as<T>(oy)[ox * ch + c];
        if constexpr (std::is_floating_point_v<T>) d = static_cast<T>(s / n);
        else d = static_cast<T>(std::floor(s / n + 0.5));
      }
  return out;
}

Image naive_overview(const ImageView& src, int f) {
  switch (src.format.type) {
    case PixelType::U8: return naive_overview<std::uint8_t>(src, f);
    case PixelType::U16: return naive_overview<std::uint16_t>(src, f);
    case PixelType::F32: break;
  }
  return naive_overview<float>(src, f);
}

bool same_bits(const ImageView& a, const ImageView& b) {
  if (a.width != b.width || a.height != b.height || a.format != b.format) return false;
  for (int y = 0; y < a.height; ++y)
    if (std::memcmp(a.row(y), b.row(y), a.row_bytes()) != 0) return false;
  return true;
}

// Largest |a - b| and the mean of |a - b| over the samples of two u8 images of one size.
std::pair<int, double> u8_difference(const ImageView& a, const ImageView& b) {
  int worst = 0;
  double sum = 0;
  const int n = a.width * a.format.channels;
  for (int y = 0; y < a.height; ++y)
    for (int i = 0; i < n; ++i) {
      const int d = std::abs(a.row_as<const std::uint8_t>(y)[i] - b.row_as<const std::uint8_t>(y)[i]);
      worst = std::max(worst, d);
      sum += d;
    }
  return {worst, sum / (static_cast<double>(n) * a.height)};
}

// ---------------------------------------------------------------------------------------------
// The average itself, through a reader whose pixels are a hash of (x, y, c): images of several bands
// without writing them anywhere.

class MadeUpReader final : public ImageReader {
 public:
  MadeUpReader(int w, int h, Format f, RowAccess access) {
    info_.width = w, info_.height = h, info_.format = f, info_.access = access, info_.codec = "made-up";
  }
  static double value(int x, int y, int c) {
    std::uint32_t v = static_cast<std::uint32_t>(x) * 73856093u ^ static_cast<std::uint32_t>(y) * 19349663u ^
                      static_cast<std::uint32_t>(c) * 83492791u;
    v ^= v >> 13, v *= 0x5bd1e995u, v ^= v >> 15;
    return (v & 0xffff) / 65535.0;
  }
  void read_rows(int y, const ImageView& rows) override {
    if (info_.access == RowAccess::Sequential && y != next_) throw Error(ErrorKind::InvalidArgument, "out of order");
    next_ = y + rows.height;
    const int ch = info_.format.channels;
    for (int r = 0; r < rows.height; ++r)
      for (int x = 0; x < rows.width; ++x)
        for (int c = 0; c < ch; ++c) {
          const double v = value(x, y + r, c);
          const std::size_t i = static_cast<std::size_t>(x) * ch + c;
          switch (info_.format.type) {
            case PixelType::U8: rows.row_as<std::uint8_t>(r)[i] = static_cast<std::uint8_t>(v * 255); break;
            case PixelType::U16: rows.row_as<std::uint16_t>(r)[i] = static_cast<std::uint16_t>(v * 65535); break;
            case PixelType::F32: rows.row_as<float>(r)[i] = static_cast<float>(v * 2 - 0.5); break;
          }
        }
  }

 private:
  int next_ = 0;
};

TEST(Overview, ParallelAverageEqualsSerialAndNaiveOverSeveralBands) {
  // 16 MB bands (about 900, 1400 and 230 rows of these): each image takes two bands or more.
  for (const Format f : {Format{PixelType::U8, 3}, Format{PixelType::U16, 1}, Format{PixelType::F32, 3}}) {
    for (const int factor : {1, 3, 64}) {
      const int w = 6001, h = f.type == PixelType::U16 ? 2003 : 1003;
      SCOPED_TRACE(to_string(f) + " factor " + std::to_string(factor));
      MadeUpReader a(w, h, f, RowAccess::Random), b(w, h, f, RowAccess::Sequential);
      const Image serial = read_overview(a, factor, {}, nullptr, 1);
      const Image parallel = read_overview(b, factor, {}, nullptr, 4);
      EXPECT_TRUE(same_bits(serial.view(), parallel.view()));
      if (factor == 1 || f.type == PixelType::F32) continue;  // floats: the order of the sums differs
      MadeUpReader c(w, h, f, RowAccess::Random);
      Image whole(w, h, f);
      c.read_rows(0, whole.view());
      EXPECT_TRUE(same_bits(naive_overview(whole.view(), factor).view(), parallel.view()));
    }
  }
}

TEST(Overview, ProgressRisesToOneAndCancelStopsBetweenBands) {
  MadeUpReader r(6000, 2000, Format{PixelType::U8, 3}, RowAccess::Random);
  std::vector<double> seen;
  read_overview(r, 4, [&](double p) { seen.push_back(p); });
  ASSERT_GE(seen.size(), 3u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);

  std::atomic<bool> cancel{false};
  int calls = 0;
  try {
    read_overview(
        r, 4, [&](double) { cancel = ++calls == 1; }, &cancel);
    ADD_FAILURE() << "not cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Cancelled);
  }
  EXPECT_EQ(calls, 1);
}

#ifdef TF_HAVE_LIBTIFF
// ---------------------------------------------------------------------------------------------
// TIFF pyramids written by libtiff: the levels' pixels are random, unrelated to the full image, so
// an overview made from a level cannot be mistaken for one made from the full image.

struct Page {
  Image image;
  bool reduced = false;  // NEWSUBFILETYPE's reduced-resolution bit
  int tile = 0;          // 0: strips of 7 rows
  std::uint16_t compression = COMPRESSION_ADOBE_DEFLATE;
  bool junk = false;  // units of random bytes instead of compressed pixels (a level that breaks on reading)
};

void write_directory(TIFF* t, const Page& p) {
  const ImageView v = p.image.view();
  const int bps = static_cast<int>(v.format.pixel_bytes() / v.format.channels) * 8;
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(v.width));
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(v.height));
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, v.format.channels);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bps);
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, v.format.channels >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(t, TIFFTAG_COMPRESSION, p.compression);
  if (p.reduced) TIFFSetField(t, TIFFTAG_SUBFILETYPE, FILETYPE_REDUCEDIMAGE);
  std::mt19937 rng(static_cast<unsigned>(v.width));
  auto unit = [&](std::vector<std::uint8_t>& buf) {
    if (p.junk)
      for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
  };
  const std::size_t px = v.format.pixel_bytes();
  if (p.tile) {
    TIFFSetField(t, TIFFTAG_TILEWIDTH, static_cast<std::uint32_t>(p.tile));
    TIFFSetField(t, TIFFTAG_TILELENGTH, static_cast<std::uint32_t>(p.tile));
    std::vector<std::uint8_t> buf(static_cast<std::size_t>(p.tile) * p.tile * px);
    for (int y = 0; y < v.height; y += p.tile)
      for (int x = 0; x < v.width; x += p.tile) {
        std::fill(buf.begin(), buf.end(), 0);
        for (int r = 0; r < p.tile && y + r < v.height; ++r)
          std::memcpy(&buf[static_cast<std::size_t>(r) * p.tile * px], v.row(y + r) + x * px,
                      static_cast<std::size_t>(std::min(p.tile, v.width - x)) * px);
        const auto n = static_cast<tmsize_t>(buf.size());
        const std::uint32_t i = TIFFComputeTile(t, x, y, 0, 0);
        if (p.junk) unit(buf), TIFFWriteRawTile(t, i, buf.data(), n / 8);
        else TIFFWriteEncodedTile(t, i, buf.data(), n);
      }
  } else {
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 7u);
    for (int y = 0; y < v.height; y += 7) {
      const int rows = std::min(7, v.height - y);
      std::vector<std::uint8_t> buf(static_cast<std::size_t>(rows) * v.row_bytes());
      for (int r = 0; r < rows; ++r) std::memcpy(&buf[r * v.row_bytes()], v.row(y + r), v.row_bytes());
      const auto n = static_cast<tmsize_t>(buf.size());
      if (p.junk) unit(buf), TIFFWriteRawStrip(t, y / 7, buf.data(), n / 8);
      else TIFFWriteEncodedStrip(t, y / 7, buf.data(), n);
    }
  }
  TIFFWriteDirectory(t);
}

// pages[0] and the rest as further pages, or (subifds) the rest as SubIFDs of pages[0].
void write_pyramid(const std::string& path, const std::vector<Page>& pages, bool subifds) {
  TIFF* t = TIFFOpen(path.c_str(), "w");
  ASSERT_TRUE(t);
  if (subifds && pages.size() > 1) {
    std::vector<toff_t> offsets(pages.size() - 1, 0);  // filled in by libtiff as the SubIFDs are written
    TIFFSetField(t, TIFFTAG_SUBIFD, static_cast<std::uint16_t>(offsets.size()), offsets.data());
  }
  for (const Page& p : pages) write_directory(t, p);
  TIFFClose(t);
}

Image random_u8(int w, int h, int ch, std::uint32_t seed) {
  return random_image(w, h, Format{PixelType::U8, ch}, test::test_seed(seed));
}

class TiffPyramid : public ::testing::TestWithParam<bool> {};  // SubIFDs or pages

TEST_P(TiffPyramid, OverviewComesFromTheCoarsestLevelAtLeastItsSize) {
  TempDir dir;
  const std::string path = dir / "pyramid.tif";
  std::vector<Page> pages;
  pages.push_back({random_u8(301, 203, 3, 1), false, 32});
  pages.push_back({random_u8(151, 102, 3, 2), true, 16});  // 1/2, rounded up
  pages.push_back({random_u8(75, 51, 3, 3), true, 0});     // 1/4, the width rounded down
  write_pyramid(path, pages, GetParam());

  auto reader = open_image(path);
  const ImageInfo& info = reader->info();
  ASSERT_EQ(info.levels, (std::vector<LevelSize>{{151, 102}, {75, 51}}));
  EXPECT_EQ(info.note, "");
  for (int i = 0; i < 2; ++i)
    EXPECT_TRUE(same_bits(read_whole(*reader->open_level(i)).view(), pages[i + 1].image.view())) << i;

  // Factor 2: the 1/2 level is the overview's size: copied.
  EXPECT_TRUE(same_bits(read_overview(*open_image(path), 2).view(), pages[1].image.view()));
  // Factor 4 wants 76 x 51: the 1/4 level is one column short, so the 1/2 level is averaged by 2.
  EXPECT_TRUE(same_bits(read_overview(*open_image(path), 4).view(), naive_overview(pages[1].image.view(), 2).view()));
  // Factor 8 (38 x 26): from the 1/4 level, boxes of 2 (the last column and row alone).
  EXPECT_TRUE(same_bits(read_overview(*open_image(path), 8).view(), naive_overview(pages[2].image.view(), 2).view()));
  // Factor 1: the image itself.
  EXPECT_TRUE(same_bits(read_overview(*open_image(path), 1).view(), pages[0].image.view()));
}

INSTANTIATE_TEST_SUITE_P(Kinds, TiffPyramid, ::testing::Values(false, true),
                         [](const auto& i) { return i.param ? "SubIFDs" : "ReducedPages"; });

TEST(TiffPyramidLevels, ForeignOrLyingLevelsAreIgnored) {
  TempDir dir;
  const std::string path = dir / "liars.tif";
  std::vector<Page> pages;
  pages.push_back({random_u8(200, 120, 3, 4), false, 0});
  pages.push_back({random_u8(100, 60, 1, 5), true, 0});   // gray: another pixel format
  pages.push_back({random_u8(200, 120, 3, 6), true, 0});  // no smaller than the image
  pages.push_back({random_u8(50, 30, 3, 7), true, 0});    // a level
  pages.push_back({random_u8(60, 20, 3, 8), true, 0});    // wider than the level before it
  Page tiny{random_u8(9, 5, 3, 9), false, 0};             // a page of its own: the pyramid ends here
  pages.push_back(tiny);
  pages.push_back({random_u8(4, 3, 3, 10), true, 0});
  write_pyramid(path, pages, false);
  auto reader = open_image(path);
  EXPECT_EQ(reader->info().levels, (std::vector<LevelSize>{{50, 30}}));
  EXPECT_EQ(reader->info().note, "first page of 3 read");  // the image, the 9 x 5 page, its 4 x 3 level
  EXPECT_TRUE(same_bits(read_overview(*reader, 4).view(), pages[3].image.view()));
  try {
    reader->open_level(1);
    ADD_FAILURE() << "no such level";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(TiffPyramidLevels, ALevelThatBreaksGivesWayToTheFullImage) {
  TempDir dir;
  const std::string path = dir / "broken.tif";
  std::vector<Page> pages;
  pages.push_back({random_u8(257, 130, 3, 11), false, 16});
  Page junk{random_u8(129, 65, 3, 12), true, 16};
  junk.junk = true;
  pages.push_back(junk);
  write_pyramid(path, pages, true);
  auto reader = open_image(path);
  ASSERT_EQ(reader->info().levels.size(), 1u);  // its header is fine: found at open ...
  try {
    read_whole(*reader->open_level(0));  // ... and broken when read, with the file named
    ADD_FAILURE() << "junk decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_TRUE(same_bits(read_overview(*reader, 2).view(), naive_overview(pages[0].image.view(), 2).view()));
}

TEST(TiffPyramidLevels, ALevelClaimingMoreThanItsDataHoldsIsIgnored) {
  TempDir dir;
  const std::string path = dir / "short.tif";
  std::vector<Page> pages;
  pages.push_back({random_u8(99, 77, 1, 13), false, 0});
  Page short_level{random_u8(50, 39, 1, 14), true, 0, COMPRESSION_NONE};
  short_level.junk = true;  // uncompressed strips an eighth of their size
  pages.push_back(short_level);
  write_pyramid(path, pages, true);
  auto reader = open_image(path);
  EXPECT_TRUE(reader->info().levels.empty());
  EXPECT_TRUE(same_bits(read_overview(*reader, 2).view(), naive_overview(pages[0].image.view(), 2).view()));
}

// --tiff-pyramid: each level the 2 x 2 average of the one before (exactly, for integers), down to
// one tile, read back as reduced-resolution pages; the overview then comes from them.
TEST(TiffPyramidWriter, LevelsAreHalvesDownToOneTile) {
  TempDir dir;
  for (const Format f : {Format{PixelType::U8, 3}, Format{PixelType::U16, 4}, Format{PixelType::F32, 1}}) {
    SCOPED_TRACE(to_string(f));
    const Image image = random_image(301, 167, f, test::test_seed(30));
    const std::string path = dir / "written.tif";
    WriteOptions o;
    o.tiff_pyramid = true;
    o.tiff_tile = {32, 32};
    auto w = create_image(path, image.width(), image.height(), f, {}, o);
    for (int y = 0; y < image.height(); y += 10)
      w->write_rows(image.view().sub({0, y, image.width(), std::min(10, image.height() - y)}));
    w->finish();
    w.reset();
    auto reader = open_image(path);
    ASSERT_EQ(reader->info().levels,
              (std::vector<LevelSize>{{151, 84}, {76, 42}, {38, 21}, {19, 11}}));  // the last within 32 x 32
    EXPECT_TRUE(same_bits(read_whole(*reader).view(), image.view()));
    Image want = naive_overview(image.view(), 2);
    for (int i = 0; i < 4; ++i) {
      const Image level = read_whole(*reader->open_level(i));
      if (f.type == PixelType::F32) EXPECT_EQ(level.width(), want.width());
      else EXPECT_TRUE(same_bits(level.view(), want.view())) << "level " << i;
      want = naive_overview(level.view(), 2);
    }
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path), {}), 1) << "temporary files left";
  }
}

TEST(TiffPyramidWriter, ApplyWritesAPyramidOnRequest) {
  TempDir dir;
  ASSERT_EQ(test::run_cli(fmt::format("generate {} --size 600x500 --seed 3", dir / "in.png")), 0);
  ASSERT_EQ(test::run_cli(fmt::format("apply {} {} -f box:radius=1 --tiff-pyramid", dir / "in.png", dir / "out.tif")),
            0);
  auto reader = open_image(dir / "out.tif");
  EXPECT_EQ(reader->info().levels, (std::vector<LevelSize>{{300, 250}, {150, 125}}));
}

TEST(TiffPyramidWriter, AnAbandonedWriterLeavesNoFiles) {
  TempDir dir;
  WriteOptions o;
  o.tiff_pyramid = true;
  const Image image = random_u8(700, 600, 3, 31);
  {
    auto w = create_image(dir / "gone.tif", 700, 600, image.format(), {}, o);
    w->write_rows(image.view().sub({0, 0, 700, 333}));
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path), {}), 0);
}
#endif

#ifdef TF_HAVE_LIBJPEG
// ---------------------------------------------------------------------------------------------
// JPEG: DCT-scaled decodes against the full decode's box average.

// Smooth random content (a random 1/16 grid, bilinear): what JPEG is for, and no ringing at edges.
Image smooth_random(int w, int h, int ch, std::uint32_t seed) {
  const Image grid = random_u8(w / 16 + 2, h / 16 + 2, ch, seed);
  Image out(w, h, Format{PixelType::U8, ch});
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < ch; ++c) {
        const double fx = x / 16.0, fy = y / 16.0;
        const int gx = static_cast<int>(fx), gy = static_cast<int>(fy);
        const double ax = fx - gx, ay = fy - gy;
        auto g = [&](int xx, int yy) { return grid.view().row_as<const std::uint8_t>(yy)[xx * ch + c]; };
        const double v = (1 - ay) * ((1 - ax) * g(gx, gy) + ax * g(gx + 1, gy)) +
                         ay * ((1 - ax) * g(gx, gy + 1) + ax * g(gx + 1, gy + 1));
        out.view().row_as<std::uint8_t>(y)[x * ch + c] = static_cast<std::uint8_t>(v + 0.5);
      }
  return out;
}

// libjpeg's own defaults: 4:2:0 for colour; progressive on request.
void write_jpeg(const std::string& path, const ImageView& v, bool progressive) {
  test::JpegShape shape;
  shape.progressive = progressive;
  test::write_bytes(path, test::libjpeg_encode(v, shape));
}

struct JpegCase {
  int channels;
  bool progressive;
};

class JpegScaled : public ::testing::TestWithParam<JpegCase> {};

TEST_P(JpegScaled, OverviewIsCloseToTheFullDecodesAverage) {
  const JpegCase jc = GetParam();
  TempDir dir;
  const std::string path = dir / "scaled.jpg";
  write_jpeg(path, smooth_random(613, 407, jc.channels, 20 + jc.channels).view(), jc.progressive);
  auto reader = open_image(path);
  EXPECT_EQ(reader->info().levels, (std::vector<LevelSize>{{307, 204}, {154, 102}, {77, 51}}));
  const Image whole = read_whole(*open_image(path));
  for (const int factor : {2, 4, 8, 16, 32}) {
    SCOPED_TRACE("factor " + std::to_string(factor));
    const Image o = read_overview(*open_image(path), factor);
    const Image want = naive_overview(whole.view(), factor);
    ASSERT_EQ(o.width(), want.width());
    ASSERT_EQ(o.height(), want.height());
    const auto [worst, mean] = u8_difference(o.view(), want.view());
    EXPECT_LE(worst, 12);
    EXPECT_LE(mean, 1.5);
    EXPECT_FALSE(same_bits(o.view(), want.view()));  // it did not decode everything
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, JpegScaled,
                         ::testing::Values(JpegCase{3, false}, JpegCase{1, false}, JpegCase{3, true}),
                         [](const auto& i) {
                           return std::string(i.param.channels == 1 ? "Gray" : "Rgb420") +
                                  (i.param.progressive ? "Progressive" : "");
                         });
#endif

}  // namespace
}  // namespace tf
