// The libtiff reader and writer (core/src/io/tiff_reader.cpp, tiff_writer.cpp), through io::tiff_codec() directly:
// bitwise round trips for every type x channel count x layout x compression, bands of odd heights
// in any order, gray+alpha, BigTIFF, predictors, metadata, files libtiff itself writes in layouts
// ours never does (separate planes, palettes, min-is-white, 1-bit, PackBits, JPEG, several pages),
// and bad input (empty, garbage, a huge header with no data, truncation, a corrupt tile).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "io/formats.hpp"
#include "io/metadata.hpp"
#include "test_support.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/util/error.hpp"

#ifdef TF_HAVE_LIBTIFF
#include <tiffio.h>

namespace tf {
namespace {

namespace fs = std::filesystem;
using test::random_image;
using test::TempDir;

const io::FormatCodec& codec() { return io::tiff_codec(); }

void write_tiff(const std::string& path, const ImageView& img, const WriteOptions& opt = {}, const Metadata& md = {},
                int band = 5) {
  const Format f = img.format;
  auto w = codec().create(path, img.width, img.height, f, md, opt);
  for (int y = 0; y < img.height; y += band) {
    const int h = std::min(band, img.height - y);
    w->write_rows(img.sub({0, y, img.width, h}));
  }
  w->finish();
}

// Reads in bands of `band` rows, in a shuffled order (seed != 0) or top to bottom.
Image read_tiff(const std::string& path, int band = 7, ImageInfo* info = nullptr, unsigned seed = 1) {
  auto r = codec().open(path, Limits{});
  if (info) *info = r->info();
  EXPECT_EQ(r->info().access, RowAccess::Random);
  Image img(r->info().width, r->info().height, r->info().format);
  std::vector<int> starts;
  for (int y = 0; y < img.height(); y += band) starts.push_back(y);
  if (seed) std::shuffle(starts.begin(), starts.end(), std::mt19937(seed));
  for (int y : starts) r->read_rows(y, img.view().sub({0, y, img.width(), std::min(band, img.height() - y)}));
  return img;
}

using test::read_bytes;
using test::write_bytes;

std::vector<std::string> compressions() {
  std::vector<std::string> c{"none", "deflate", "lzw"};
  if (TIFFIsCODECConfigured(COMPRESSION_ZSTD)) c.push_back("zstd");
  return c;
}

// Expects fn to throw tf::Error whose message contains every one of `parts`; returns the error kind.
template <class Fn> ErrorKind expect_error(Fn fn, std::vector<std::string> parts) {
  try {
    fn();
  } catch (const Error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no tf::Error thrown";
  return ErrorKind::Internal;
}

TEST(IoTiff, Available) {
  EXPECT_TRUE(codec().available());
  const unsigned char le[] = {'I', 'I', 42, 0}, be[] = {'M', 'M', 0, 42}, big[] = {'I', 'I', 43, 0},
                      png[] = {0x89, 'P', 'N', 'G'};
  EXPECT_TRUE(codec().sniff(std::span<const unsigned char>(le)));
  EXPECT_TRUE(codec().sniff(std::span<const unsigned char>(be)));
  EXPECT_TRUE(codec().sniff(std::span<const unsigned char>(big)));
  EXPECT_FALSE(codec().sniff(std::span<const unsigned char>(png)));
  EXPECT_TRUE(codec().has_extension(".tif"));
  EXPECT_TRUE(codec().has_extension(".tiff"));
  EXPECT_FALSE(codec().has_extension(".png"));
  for (auto t : {PixelType::U8, PixelType::U16, PixelType::F32})
    for (int c : {1, 3, 4}) EXPECT_TRUE(codec().can_write(Format{t, c}, nullptr));
}

// Every type x channel count x {strips, 64x32 tiles} x compression, bitwise.
TEST(IoTiff, RoundTripEveryFormat) {
  TempDir dir;
  const auto seed = test::test_seed(11);
  int n = 0;
  for (auto t : {PixelType::U8, PixelType::U16, PixelType::F32})
    for (int c : {1, 3, 4})
      for (bool tiled : {false, true})
        for (const auto& comp : compressions()) {
          SCOPED_TRACE(fmt::format("{} {} {}", test::describe(Format{t, c}), tiled ? "tiles" : "strips", comp));
          const Image src = random_image(97, 61, Format{t, c}, seed + n++);
          WriteOptions opt;
          opt.compression = comp;
          if (tiled) opt.tiff_tile = {64, 32};
          const std::string path = dir / fmt::format("rt{}.tif", n);
          write_tiff(path, src.view(), opt);
          ImageInfo info;
          const Image back = read_tiff(path, 7, &info, n);
          EXPECT_EQ(info.format, src.format());
          EXPECT_EQ(info.stored_channels, c);
          EXPECT_EQ(info.compression, comp);
          EXPECT_EQ(info.codec, "libtiff");
          EXPECT_TRUE(same_pixels(src.view(), back.view()));
        }
}

TEST(IoTiff, OddSizesAndBands) {
  TempDir dir;
  const auto seed = test::test_seed(12);
  int n = 0;
  for (auto [w, h] : {std::pair{1, 1}, std::pair{300, 257}, std::pair{1100, 131}})
    for (auto f : {Format{PixelType::U8, 3}, Format{PixelType::F32, 3}, Format{PixelType::U16, 4}})
      for (bool tiled : {false, true})
        for (std::string comp : {"deflate", "lzw"}) {
          SCOPED_TRACE(fmt::format("{}x{} {} {} {}", w, h, test::describe(f), tiled ? "tiles" : "strips", comp));
          const Image src = random_image(w, h, f, seed + n++);
          WriteOptions opt;
          opt.compression = comp;
          if (tiled) opt.tiff_tile = {64, 32};
          const std::string path = dir / fmt::format("odd{}.tif", n);
          write_tiff(path, src.view(), opt, {}, 1 + n % 9);
          EXPECT_TRUE(same_pixels(src.view(), read_tiff(path, 7, nullptr, n).view()));
          EXPECT_TRUE(same_pixels(src.view(), read_tiff(path, 1, nullptr, 0).view()));  // row by row, top down
          EXPECT_TRUE(same_pixels(src.view(), read_tiff(path, h).view()));
        }
}

// Many strips, bands that straddle them, read top to bottom (the one-strip-row cache) and
// overlapping re-reads.
TEST(IoTiff, ManyStripsAndRereads) {
  TempDir dir;
  const Image src = random_image(1500, 900, Format{PixelType::U8, 3}, test::test_seed(13));  // ~116 rows a strip
  const std::string path = dir / "many.tif";
  write_tiff(path, src.view(), {}, {}, 37);
  auto r = codec().open(path, Limits{});
  Image back(1500, 900, r->info().format);
  for (int y = 0; y < 900; y += 50) r->read_rows(y, back.view().sub({0, y, 1500, std::min(50, 900 - y)}));
  EXPECT_TRUE(same_pixels(src.view(), back.view()));
  Image part(1500, 333, r->info().format);
  r->read_rows(101, part.view());
  EXPECT_TRUE(same_pixels(src.view().sub({0, 101, 1500, 333}), part.view()));
  r->read_rows(0, back.view());
  EXPECT_TRUE(same_pixels(src.view(), back.view()));
}

TEST(IoTiff, GrayAlpha) {
  TempDir dir;
  for (auto t : {PixelType::U8, PixelType::U16, PixelType::F32}) {
    Image src = random_image(83, 41, Format{t, 4}, test::test_seed(14));
    const std::size_t s = bytes_per_sample(t);
    for (int y = 0; y < src.height(); ++y)
      for (int x = 0; x < src.width(); ++x) {
        std::byte* p = src.view().row(y) + x * 4 * s;
        std::memcpy(p + s, p, s);
        std::memcpy(p + 2 * s, p, s);
      }
    WriteOptions opt;
    opt.gray_alpha = true;
    const std::string path = dir / "ga.tif";
    write_tiff(path, src.view(), opt);
    ImageInfo info;
    const Image back = read_tiff(path, 7, &info);
    EXPECT_EQ(info.stored_channels, 2);
    EXPECT_EQ(info.format, (Format{t, 4}));
    EXPECT_TRUE(same_pixels(src.view(), back.view()));
    TIFF* tif = TIFFOpen(path.c_str(), "r");
    ASSERT_TRUE(tif);
    std::uint16_t spp = 0, extra_n = 0, *extra = nullptr;
    TIFFGetField(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetField(tif, TIFFTAG_EXTRASAMPLES, &extra_n, &extra);
    EXPECT_EQ(spp, 2);
    ASSERT_EQ(extra_n, 1);
    EXPECT_EQ(extra[0], EXTRASAMPLE_UNASSALPHA);
    TIFFClose(tif);
  }
}

TEST(IoTiff, BigTiffFlag) {
  TempDir dir;
  const Image src = random_image(130, 70, Format{PixelType::U16, 3}, test::test_seed(15));
  WriteOptions opt;
  opt.bigtiff = true;
  opt.tiff_tile = {32, 16};
  const std::string path = dir / "big.tif";
  write_tiff(path, src.view(), opt);
  const auto b = read_bytes(path);
  ASSERT_GE(b.size(), 4u);
  EXPECT_EQ(b[2], 43);  // "II+\0"
  EXPECT_TRUE(same_pixels(src.view(), read_tiff(path).view()));
}

// The file says what it holds: compression and predictor tags, and libtiff's own decoding of a
// strip equals the pixels.
TEST(IoTiff, PredictorsAndTags) {
  TempDir dir;
  struct Case {
    Format f;
    std::string comp;
    int compression, predictor;
  };
  std::vector<Case> cases{{{PixelType::U8, 3}, "deflate", COMPRESSION_ADOBE_DEFLATE, PREDICTOR_HORIZONTAL},
                          {{PixelType::U16, 1}, "lzw", COMPRESSION_LZW, PREDICTOR_HORIZONTAL},
                          {{PixelType::F32, 3}, "deflate", COMPRESSION_ADOBE_DEFLATE, PREDICTOR_FLOATINGPOINT},
                          {{PixelType::F32, 4}, "lzw", COMPRESSION_LZW, PREDICTOR_FLOATINGPOINT},
                          {{PixelType::U8, 4}, "none", COMPRESSION_NONE, PREDICTOR_NONE}};
  if (TIFFIsCODECConfigured(COMPRESSION_ZSTD))
    cases.push_back({{PixelType::F32, 1}, "zstd", COMPRESSION_ZSTD, PREDICTOR_FLOATINGPOINT});
  for (const auto& c : cases) {
    SCOPED_TRACE(test::describe(c.f) + " " + c.comp);
    const Image src = random_image(120, 50, c.f, test::test_seed(16));
    WriteOptions opt;
    opt.compression = c.comp;
    opt.level = 1;
    const std::string path = dir / "p.tif";
    write_tiff(path, src.view(), opt);
    TIFF* tif = TIFFOpen(path.c_str(), "r");
    ASSERT_TRUE(tif);
    std::uint16_t comp = 0, pred = PREDICTOR_NONE;
    TIFFGetField(tif, TIFFTAG_COMPRESSION, &comp);
    if (comp != COMPRESSION_NONE) TIFFGetFieldDefaulted(tif, TIFFTAG_PREDICTOR, &pred);
    EXPECT_EQ(comp, c.compression);
    EXPECT_EQ(pred, c.predictor);
    std::vector<std::uint8_t> strip(TIFFStripSize(tif));
    const tmsize_t got = TIFFReadEncodedStrip(tif, 0, strip.data(), -1);
    ASSERT_GT(got, 0);
    const std::size_t rb = src.view().row_bytes();
    for (int y = 0; y < got / static_cast<tmsize_t>(rb); ++y)
      ASSERT_EQ(std::memcmp(strip.data() + y * rb, src.view().row(y), rb), 0) << "row " << y;
    TIFFClose(tif);
  }
}

TEST(IoTiff, MetadataRoundTrip) {
  TempDir dir;
  const Image src = random_image(40, 30, Format{PixelType::U8, 3}, test::test_seed(17));
  Metadata md;
  md.icc.resize(3000);
  std::mt19937 rng(5);
  for (auto& b : md.icc) b = static_cast<unsigned char>(rng());
  md.xmp = "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF/></x:xmpmeta>";
  md.orientation = 6;
  const std::string path = dir / "md.tif";
  write_tiff(path, src.view(), {}, md);
  ImageInfo info;
  read_tiff(path, 7, &info);
  EXPECT_EQ(info.metadata.icc, md.icc);
  EXPECT_EQ(info.metadata.xmp, md.xmp);
  EXPECT_EQ(info.metadata.orientation, 6);

  WriteOptions strip;
  strip.strip = true;
  write_tiff(path, src.view(), strip, md);
  read_tiff(path, 7, &info);
  EXPECT_TRUE(info.metadata.empty());
}

TEST(IoTiff, TextTagsBecomeExif) {
  TempDir dir;
  const std::string path = dir / "text.tif";
  {
    TIFF* t = TIFFOpen(path.c_str(), "w");
    ASSERT_TRUE(t);
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 4u);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, 2u);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_MAKE, "TestCam");
    TIFFSetField(t, TIFFTAG_ARTIST, "Someone");
    TIFFSetField(t, TIFFTAG_ORIENTATION, 3);
    unsigned char px[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    TIFFWriteEncodedStrip(t, 0, px, 8);
    TIFFClose(t);
  }
  ImageInfo info;
  read_tiff(path, 7, &info);
  EXPECT_EQ(info.metadata.orientation, 3);
  if (!info.metadata.exif.empty()) {  // empty while the EXIF helpers are not in the build
    const auto text = io::exif_ifd0_text(info.metadata.exif);
    EXPECT_EQ(text.make, "TestCam");
    EXPECT_EQ(text.artist, "Someone");
  }
}

// ----- files libtiff writes in layouts our writer never makes -----

struct Raw {
  std::uint32_t w = 0, h = 0;
  std::uint16_t spp = 1, bps = 8, photometric = PHOTOMETRIC_MINISBLACK, planar = PLANARCONFIG_CONTIG,
                compression = COMPRESSION_NONE, sample_format = SAMPLEFORMAT_UINT;
  std::uint32_t rows_per_strip = 0;
  int pages = 1;
  std::vector<std::uint16_t> extra;
  std::vector<std::uint16_t> map_r, map_g, map_b;
};

// Writes `planes` (one buffer per plane when separate, else one) through libtiff, strip by strip.
void libtiff_write(const std::string& path, const Raw& r, const std::vector<std::vector<std::uint8_t>>& planes) {
  TIFF* t = TIFFOpen(path.c_str(), "w");
  ASSERT_TRUE(t);
  for (int page = 0; page < r.pages; ++page) {
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, r.w);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, r.h);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, r.spp);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, r.bps);
    TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, r.sample_format);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, r.photometric);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, r.planar);
    TIFFSetField(t, TIFFTAG_COMPRESSION, r.compression);
    if (!r.extra.empty())
      TIFFSetField(t, TIFFTAG_EXTRASAMPLES, static_cast<std::uint16_t>(r.extra.size()), r.extra.data());
    if (!r.map_r.empty()) TIFFSetField(t, TIFFTAG_COLORMAP, r.map_r.data(), r.map_g.data(), r.map_b.data());
    if (r.compression == COMPRESSION_JPEG) {
      TIFFSetField(t, TIFFTAG_JPEGQUALITY, 95);
      TIFFSetField(t, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
    }
    const std::uint32_t rps = r.rows_per_strip ? r.rows_per_strip : r.h;
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, rps);
    const tmsize_t line = TIFFScanlineSize(t);
    for (std::size_t p = 0; p < planes.size(); ++p)
      for (std::uint32_t y = 0; y < r.h; y += rps) {
        const std::uint32_t n = std::min(rps, r.h - y);
        const std::uint32_t strip = TIFFComputeStrip(t, y, static_cast<std::uint16_t>(p));
        ASSERT_GE(TIFFWriteEncodedStrip(t, strip, const_cast<std::uint8_t*>(planes[p].data()) + y * line, n * line), 0);
      }
    TIFFWriteDirectory(t);
  }
  TIFFClose(t);
}

TEST(IoTiff, ReadsSeparatePlanes) {
  TempDir dir;
  const Image src = random_image(77, 45, Format{PixelType::U16, 4}, test::test_seed(18));
  Raw r;
  r.w = 77, r.h = 45, r.spp = 4, r.bps = 16, r.photometric = PHOTOMETRIC_RGB, r.planar = PLANARCONFIG_SEPARATE;
  r.compression = COMPRESSION_LZW, r.rows_per_strip = 8, r.extra = {EXTRASAMPLE_UNASSALPHA};
  std::vector<std::vector<std::uint8_t>> planes(4, std::vector<std::uint8_t>(77 * 45 * 2));
  for (int y = 0; y < 45; ++y)
    for (int x = 0; x < 77; ++x)
      for (int c = 0; c < 4; ++c) std::memcpy(&planes[c][(y * 77 + x) * 2], src.view().row(y) + (x * 4 + c) * 2, 2);
  const std::string path = dir / "planes.tif";
  libtiff_write(path, r, planes);
  ImageInfo info;
  EXPECT_TRUE(same_pixels(src.view(), read_tiff(path, 7, &info).view()));
  EXPECT_EQ(info.format, (Format{PixelType::U16, 4}));
}

TEST(IoTiff, ReadsPaletteMinIsWhiteBilevelPackBitsPages) {
  TempDir dir;
  std::mt19937 rng(test::test_seed(19));
  // 8-bit and 4-bit palettes with 16-bit colormap entries.
  for (int bps : {8, 4}) {
    Raw r;
    r.w = 37, r.h = 23, r.bps = static_cast<std::uint16_t>(bps), r.photometric = PHOTOMETRIC_PALETTE;
    r.compression = COMPRESSION_PACKBITS, r.rows_per_strip = 5;
    const int n = 1 << bps;
    for (int i = 0; i < n; ++i) {
      r.map_r.push_back(static_cast<std::uint16_t>(rng() & 0xFFFF));
      r.map_g.push_back(static_cast<std::uint16_t>(rng() & 0xFFFF));
      r.map_b.push_back(static_cast<std::uint16_t>(257 * i));
    }
    const std::size_t line = (37 * bps + 7) / 8;
    std::vector<std::vector<std::uint8_t>> data(1, std::vector<std::uint8_t>(line * 23));
    for (auto& b : data[0]) b = static_cast<std::uint8_t>(rng());
    const std::string path = dir / "pal.tif";
    libtiff_write(path, r, data);
    ImageInfo info;
    const Image img = read_tiff(path, 7, &info);
    ASSERT_EQ(info.format, (Format{PixelType::U8, 3}));
    EXPECT_EQ(info.compression, "packbits");
    for (int y = 0; y < 23; ++y)
      for (int x = 0; x < 37; ++x) {
        const int bit = x * bps;
        const int idx = (data[0][y * line + bit / 8] >> (8 - bps - bit % 8)) & (n - 1);
        const auto* p = img.view().row_as<std::uint8_t>(y) + 3 * x;
        ASSERT_EQ(p[0], (r.map_r[idx] * 255 + 32767) / 65535) << x << "," << y;
        ASSERT_EQ(p[2], (r.map_b[idx] * 255 + 32767) / 65535);
      }
  }
  // Min-is-white 8-bit, three pages.
  {
    Raw r;
    r.w = 50, r.h = 20, r.photometric = PHOTOMETRIC_MINISWHITE, r.compression = COMPRESSION_ADOBE_DEFLATE;
    r.rows_per_strip = 3, r.pages = 3;
    std::vector<std::vector<std::uint8_t>> data(1, std::vector<std::uint8_t>(50 * 20));
    for (auto& b : data[0]) b = static_cast<std::uint8_t>(rng());
    const std::string path = dir / "white.tif";
    libtiff_write(path, r, data);
    ImageInfo info;
    const Image img = read_tiff(path, 7, &info);
    EXPECT_EQ(info.note, "first page of 3 read");
    for (int y = 0; y < 20; ++y)
      for (int x = 0; x < 50; ++x) ASSERT_EQ(img.view().row_as<std::uint8_t>(y)[x], 255 - data[0][y * 50 + x]);
  }
  // 1-bit bilevel.
  {
    Raw r;
    r.w = 21, r.h = 9, r.bps = 1, r.photometric = PHOTOMETRIC_MINISBLACK;
    std::vector<std::vector<std::uint8_t>> data(1, std::vector<std::uint8_t>(3 * 9));
    for (auto& b : data[0]) b = static_cast<std::uint8_t>(rng());
    const std::string path = dir / "bw.tif";
    libtiff_write(path, r, data);
    const Image img = read_tiff(path);
    ASSERT_EQ(img.format(), (Format{PixelType::U8, 1}));
    for (int y = 0; y < 9; ++y)
      for (int x = 0; x < 21; ++x)
        ASSERT_EQ(img.view().row_as<std::uint8_t>(y)[x], ((data[0][y * 3 + x / 8] >> (7 - x % 8)) & 1) ? 255 : 0);
  }
  // Gray+alpha from libtiff, 16-bit, alpha declared as associated.
  {
    Raw r;
    r.w = 19, r.h = 11, r.spp = 2, r.bps = 16, r.extra = {EXTRASAMPLE_ASSOCALPHA};
    std::vector<std::vector<std::uint8_t>> data(1, std::vector<std::uint8_t>(19 * 11 * 4));
    for (auto& b : data[0]) b = static_cast<std::uint8_t>(rng());
    const std::string path = dir / "ga16.tif";
    libtiff_write(path, r, data);
    ImageInfo info;
    const Image img = read_tiff(path, 7, &info);
    ASSERT_EQ(info.format, (Format{PixelType::U16, 4}));
    EXPECT_EQ(info.stored_channels, 2);
    const auto* s = reinterpret_cast<const std::uint16_t*>(data[0].data());
    for (int y = 0; y < 11; ++y)
      for (int x = 0; x < 19; ++x) {
        const auto* p = img.view().row_as<std::uint16_t>(y) + 4 * x;
        ASSERT_EQ(p[0], s[(y * 19 + x) * 2]);
        ASSERT_EQ(p[1], p[0]);
        ASSERT_EQ(p[2], p[0]);
        ASSERT_EQ(p[3], s[(y * 19 + x) * 2 + 1]);
      }
  }
}

TEST(IoTiff, ReadsJpegInTiff) {
  if (!TIFFIsCODECConfigured(COMPRESSION_JPEG)) GTEST_SKIP() << "no JPEG in this libtiff";
  TempDir dir;
  Raw r;
  r.w = 64, r.h = 48, r.spp = 3, r.photometric = PHOTOMETRIC_YCBCR, r.compression = COMPRESSION_JPEG;
  r.rows_per_strip = 16;
  std::vector<std::vector<std::uint8_t>> data(1, std::vector<std::uint8_t>(64 * 48 * 3));
  for (int y = 0; y < 48; ++y)
    for (int x = 0; x < 64; ++x) {
      auto* p = &data[0][(y * 64 + x) * 3];
      p[0] = static_cast<std::uint8_t>(x * 4), p[1] = static_cast<std::uint8_t>(y * 5), p[2] = 128;
    }
  const std::string path = dir / "jpeg.tif";
  libtiff_write(path, r, data);
  ImageInfo info;
  const Image img = read_tiff(path, 7, &info);
  EXPECT_EQ(info.compression, "jpeg");
  ASSERT_EQ(img.format(), (Format{PixelType::U8, 3}));
  int worst = 0;
  for (int y = 0; y < 48; ++y)
    for (int x = 0; x < 64 * 3; ++x)
      worst = std::max(worst, std::abs(int(img.view().row_as<std::uint8_t>(y)[x]) - int(data[0][y * 64 * 3 + x])));
  EXPECT_LE(worst, 16);
}

// A smooth picture (JPEG's loss on it is small) of `f`, `w` x `h`.
Image smooth_image(int w, int h, Format f) {
  Image img(w, h, f);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < f.channels; ++c)
        img.view().row_as<std::uint8_t>(y)[x * f.channels + c] =
            static_cast<std::uint8_t>(128 + 100 * std::sin(0.01 * (x + 1) * (c + 1) + 0.013 * y));
  return img;
}

double mean_difference(const ImageView& a, const ImageView& b) {
  double sum = 0;
  const int n = a.width * a.format.channels;
  for (int y = 0; y < a.height; ++y)
    for (int x = 0; x < n; ++x) sum += std::abs(int(a.row_as<std::uint8_t>(y)[x]) - int(b.row_as<std::uint8_t>(y)[x]));
  return sum / (static_cast<double>(n) * a.height);
}

// JPEG-in-TIFF written through libtiff's JPEG codec: gray and RGB (YCbCr 4:2:0), strips (several, the
// last one short) and tiles, a pyramid; read back by our reader and by libtiff's RGBA interface.
TEST(IoTiff, WritesJpeg) {
  if (!TIFFIsCODECConfigured(COMPRESSION_JPEG)) GTEST_SKIP() << "no JPEG in this libtiff";
  TempDir dir;
  struct Case {
    int channels;
    TileSize tile;
    bool pyramid;
  };
  for (const Case& c : {Case{3, {}, false}, Case{1, {}, false}, Case{3, {64, 48}, false}, Case{3, {}, true}}) {
    SCOPED_TRACE(
        fmt::format("{} channels, tile {}x{}, pyramid {}", c.channels, c.tile.width, c.tile.height, c.pyramid));
    const Image src = smooth_image(203, 1800, Format{PixelType::U8, c.channels});  // strips of 864 rows: 864, 864, 72
    WriteOptions opt;
    opt.compression = "jpeg";
    opt.level = 92;
    opt.tiff_tile = c.tile;
    opt.tiff_pyramid = c.pyramid;
    const std::string path = dir / "j.tif";
    write_tiff(path, src.view(), opt, {}, 100);
    ImageInfo info;
    const Image back = read_tiff(path, 97, &info);
    EXPECT_EQ(info.compression, "jpeg");
    ASSERT_EQ(back.format(), src.format());
    EXPECT_LT(mean_difference(src.view(), back.view()), 1.5);
    if (c.pyramid) EXPECT_FALSE(info.levels.empty());
    TIFF* t = TIFFOpen(path.c_str(), "r");
    ASSERT_TRUE(t);
    std::uint16_t photo = 0;
    TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &photo);
    EXPECT_EQ(photo, c.channels == 3 ? PHOTOMETRIC_YCBCR : PHOTOMETRIC_MINISBLACK);
    std::vector<std::uint32_t> rgba(203 * 1800);
    ASSERT_TRUE(TIFFReadRGBAImageOriented(t, 203, 1800, rgba.data(), ORIENTATION_TOPLEFT, 0));
    EXPECT_NEAR(TIFFGetR(rgba[1799 * 203 + 202]), back.view().row_as<std::uint8_t>(1799)[202 * c.channels], 2);
    TIFFClose(t);
  }
}

// A compression kept from the input that the output cannot hold becomes deflate, with a note; asked
// for explicitly, it is refused. Old-style JPEG kept is written as JPEG.
TEST(IoTiff, KeptCompressionFallsBackToDeflate) {
  TempDir dir;
  const std::string path = dir / "k.tif";
  auto compression_of = [&] {
    TIFF* t = TIFFOpen(path.c_str(), "r");
    std::uint16_t comp = 0;
    TIFFGetField(t, TIFFTAG_COMPRESSION, &comp);
    TIFFClose(t);
    return comp;
  };
  struct Case {
    Format f;
    std::string kept;
    int written;
    std::string note;
  };
  const std::vector<Case> cases{
      {{PixelType::F32, 3},
       "jpeg",
       COMPRESSION_ADOBE_DEFLATE,
       "the input's jpeg compression holds 8-bit gray or RGB samples, not RGB f32: written with deflate"},
      {{PixelType::U8, 4}, "jpeg", COMPRESSION_ADOBE_DEFLATE, "not RGBA u8: written with deflate"},
      {{PixelType::U16, 1}, "jpeg", COMPRESSION_ADOBE_DEFLATE, "not Gray u16"},
      {{PixelType::F32, 3},
       "sgilog",
       COMPRESSION_ADOBE_DEFLATE,
       "the input's sgilog compression is not written by TileFilter: written with deflate"},
      {{PixelType::U8, 1}, "ccitt", COMPRESSION_ADOBE_DEFLATE, "ccitt compression is not written"},
      {{PixelType::U8, 3}, "old-jpeg", COMPRESSION_JPEG, ""},
      {{PixelType::U8, 3}, "packbits", COMPRESSION_PACKBITS, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(test::describe(c.f) + " " + c.kept);
    if (c.written == COMPRESSION_JPEG && !TIFFIsCODECConfigured(COMPRESSION_JPEG)) continue;
    const Image src = random_image(40, 30, c.f, test::test_seed(40));
    WriteOptions opt;
    opt.compression = c.kept;
    opt.compression_from_input = true;
    auto w = codec().create(path, 40, 30, c.f, {}, opt);
    w->write_rows(src.view());
    w->finish();
    if (c.note.empty()) EXPECT_EQ(w->note(), "");
    else EXPECT_NE(w->note().find(c.note), std::string::npos) << w->note();
    EXPECT_EQ(compression_of(), c.written);
    if (c.written == COMPRESSION_ADOBE_DEFLATE && c.f.type != PixelType::U8)
      EXPECT_TRUE(same_pixels(src.view(), read_tiff(path).view()));
    opt.compression_from_input = false;  // asked for: refused
    if (c.written == COMPRESSION_ADOBE_DEFLATE)
      EXPECT_EQ(expect_error([&] { codec().create(path, 40, 30, c.f, {}, opt); },
                             {path, c.kept == "jpeg" ? "JPEG compression holds" : "unknown TIFF compression"}),
                ErrorKind::InvalidArgument);
  }
}

// SGILog (LogLuv, as OpenCV writes float RGB; LogL for gray): libtiff decodes to float, LogLuv's XYZ
// comes out as the linear RGB it was made from.
TEST(IoTiff, ReadsSgiLog) {
  if (!TIFFIsCODECConfigured(COMPRESSION_SGILOG)) GTEST_SKIP() << "no SGILog in this libtiff";
  TempDir dir;
  for (int spp : {3, 1}) {
    SCOPED_TRACE(spp);
    const int w = 37, h = 21;
    std::vector<float> rgb(static_cast<std::size_t>(w) * h * 3), stored;
    for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = 0.05f + 0.9f * static_cast<float>((i * 7919) % 1000) / 1000;
    for (std::size_t p = 0; p < rgb.size() / 3; ++p) {
      const float r = rgb[3 * p], g = rgb[3 * p + 1], b = rgb[3 * p + 2];
      const float x = 0.412453f * r + 0.357580f * g + 0.180423f * b, y = 0.212671f * r + 0.715160f * g + 0.072169f * b,
                  z = 0.019334f * r + 0.119193f * g + 0.950227f * b;
      if (spp == 3) stored.insert(stored.end(), {x, y, z});
      else stored.push_back(y);
    }
    const std::string path = dir / "log.tif";
    TIFF* t = TIFFOpen(path.c_str(), "w");
    ASSERT_TRUE(t);
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, w);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, h);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, spp);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, spp == 3 ? PHOTOMETRIC_LOGLUV : PHOTOMETRIC_LOGL);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_SGILOG);
    TIFFSetField(t, TIFFTAG_SGILOGDATAFMT, SGILOGDATAFMT_FLOAT);
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 8);
    for (int y = 0; y < h; ++y) ASSERT_EQ(TIFFWriteScanline(t, &stored[static_cast<std::size_t>(y) * w * spp], y), 1);
    TIFFClose(t);
    ImageInfo info;
    const Image img = read_tiff(path, 5, &info);
    EXPECT_EQ(info.compression, "sgilog");
    ASSERT_EQ(img.format(), (Format{PixelType::F32, spp}));
    double worst = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w * spp; ++x) {
        const std::size_t i = static_cast<std::size_t>(y) * w * spp + x;
        const float want = spp == 3 ? rgb[i] : stored[i];
        worst = std::max(worst, std::abs(double(img.view().row_as<float>(y)[x]) - want));
      }
    // LogLuv 32 keeps luminance to 0.3 % and chroma (u', v') in steps of 1/410: RGB within a few hundredths.
    EXPECT_LT(worst, spp == 3 ? 0.03 : 0.005);
    if (spp == 3) EXPECT_NE(info.note.find("linear RGB"), std::string::npos) << info.note;
  }
}

TEST(IoTiff, RefusesSignedAndOddSamples) {
  TempDir dir;
  struct Case {
    std::uint16_t bps, fmt;
    std::string why;
  };
  for (const auto& c :
       {Case{16, SAMPLEFORMAT_INT, "signed integer"}, Case{32, SAMPLEFORMAT_UINT, "32-bit integer"},
        Case{64, SAMPLEFORMAT_IEEEFP, "64-bit floating-point"}, Case{12, SAMPLEFORMAT_UINT, "12-bit"}}) {
    Raw r;
    r.w = 8, r.h = 4, r.bps = c.bps, r.sample_format = c.fmt;
    std::vector<std::vector<std::uint8_t>> data(1, std::vector<std::uint8_t>((8 * c.bps + 7) / 8 * 4, 7));
    const std::string path = dir / "odd.tif";
    libtiff_write(path, r, data);
    EXPECT_EQ(expect_error([&] { codec().open(path, Limits{}); }, {path, c.why}), ErrorKind::Decode);
  }
}

// ----- bad input -----

TEST(IoTiff, BadInput) {
  TempDir dir;
  testing::internal::CaptureStderr();
  const std::string empty = dir / "empty.tif";
  write_bytes(empty, {});
  expect_error([&] { codec().open(empty, Limits{}); }, {empty});

  const std::string garbage = dir / "garbage.tif";
  std::vector<unsigned char> g{'I', 'I', 42, 0, 8, 0, 0, 0};
  std::mt19937 rng(3);
  for (int i = 0; i < 500; ++i) g.push_back(static_cast<unsigned char>(rng()));
  write_bytes(garbage, g);
  expect_error([&] { codec().open(garbage, Limits{}); }, {garbage});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");  // libtiff's messages never reach stderr
}

// A classic little-endian TIFF of 10^6 x 10^6 gray pixels in one strip of 100 bytes.
std::vector<unsigned char> huge_header(std::uint16_t compression) {
  std::vector<unsigned char> b{'I', 'I', 42, 0, 8, 0, 0, 0};
  auto u16 = [&](unsigned v) { b.push_back(v & 0xFF), b.push_back((v >> 8) & 0xFF); };
  auto u32 = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back((v >> (8 * i)) & 0xFF);
  };
  const int entries = 9;
  const std::uint32_t data_at = 8 + 2 + entries * 12 + 4;
  u16(entries);
  auto entry = [&](unsigned tag, unsigned type, std::uint32_t value) {
    u16(tag), u16(type), u32(1);
    if (type == 3) u16(value), u16(0);
    else u32(value);
  };
  entry(256, 4, 1000000);
  entry(257, 4, 1000000);
  entry(258, 3, 8);
  entry(259, 3, compression);
  entry(262, 3, 1);
  entry(273, 4, data_at);
  entry(277, 3, 1);
  entry(278, 4, 1000000);
  entry(279, 4, 100);
  u32(0);
  for (int i = 0; i < 100; ++i) b.push_back(static_cast<unsigned char>(i * 7));
  return b;
}

TEST(IoTiff, HugeHeaderWithoutDataIsRefused) {
  TempDir dir;
  for (std::uint16_t comp : {COMPRESSION_NONE, COMPRESSION_ADOBE_DEFLATE}) {
    const std::string path = dir / "huge.tif";
    write_bytes(path, huge_header(comp));
    testing::internal::CaptureStderr();
    const ErrorKind k = expect_error([&] { codec().open(path, Limits{}); }, {path, "1000000x1000000"});
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    EXPECT_TRUE(k == ErrorKind::Decode || k == ErrorKind::Limit);
  }
  const Image src = random_image(97, 61, Format{PixelType::U8, 1}, 1);
  const std::string ok = dir / "ok.tif";
  write_tiff(ok, src.view());
  Limits small;
  small.max_stream_pixels = 1000;
  EXPECT_EQ(expect_error([&] { codec().open(ok, small); }, {ok, "97x61"}), ErrorKind::Limit);
}

// Where the array of tag `tag` (LONG values, more than one) lies in a classic little-endian TIFF; 0 if absent.
std::size_t ifd_array(const std::vector<unsigned char>& b, unsigned tag) {
  auto u16 = [&](std::size_t at) { return unsigned(b[at]) | unsigned(b[at + 1]) << 8; };
  auto u32 = [&](std::size_t at) { return std::uint32_t(u16(at)) | std::uint32_t(u16(at + 2)) << 16; };
  if (b.size() < 8 || b[0] != 'I' || b[2] != 42) return 0;
  const std::size_t ifd = u32(4);
  const unsigned n = u16(ifd);
  for (unsigned i = 0; i < n; ++i) {
    const std::size_t e = ifd + 2 + 12 * i;
    if (u16(e) == tag && u16(e + 2) == 4 && u32(e + 4) > 1) return u32(e + 8);
  }
  return 0;
}

TEST(IoTiff, TruncatedAndCorrupt) {
  TempDir dir;
  const Image src = random_image(300, 257, Format{PixelType::U8, 3}, test::test_seed(20));
  WriteOptions opt;
  opt.tiff_tile = {64, 32};
  const std::string path = dir / "t.tif";
  write_tiff(path, src.view(), opt);
  const auto bytes = read_bytes(path);

  // Cut in half: the error names the file, at open or at the latest when the rows are read.
  const std::string half = dir / "half.tif";
  write_bytes(half, std::vector<unsigned char>(bytes.begin(), bytes.begin() + bytes.size() / 2));
  expect_error([&] { read_tiff(half); }, {half});

  // A tile in the middle overwritten with garbage: that tile is named.
  TIFF* t = TIFFOpen(path.c_str(), "r");
  ASSERT_TRUE(t);
  const std::uint32_t tile = 12;
  const auto off = TIFFGetStrileOffset(t, tile), size = TIFFGetStrileByteCount(t, tile);
  TIFFClose(t);
  auto bad = bytes;
  std::mt19937 rng(9);
  for (std::uint64_t i = off + 2; i < off + size; ++i) bad[i] = static_cast<unsigned char>(rng());
  const std::string corrupt = dir / "corrupt.tif";
  write_bytes(corrupt, bad);
  testing::internal::CaptureStderr();
  expect_error([&] { read_tiff(corrupt); }, {corrupt, "tile 12 is truncated or corrupt"});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");

  // Strips, one of which holds half the bytes it should (its byte count patched): uncompressed,
  // the file is refused at open (too little data for its size); deflated, it opens and that
  // strip fails when its rows are read.
  const Image big = random_image(1000, 600, Format{PixelType::U8, 3}, 2);  // 175 rows a strip
  for (std::string comp : {"none", "deflate"}) {
    WriteOptions o;
    o.compression = comp;
    const std::string whole = dir / "whole.tif";
    write_tiff(whole, big.view(), o);
    auto ub = read_bytes(whole);
    const std::size_t counts = ifd_array(ub, 279);
    ASSERT_NE(counts, 0u);
    std::uint32_t bc;
    std::memcpy(&bc, &ub[counts + 4 * 2], 4);
    bc /= 2;
    std::memcpy(&ub[counts + 4 * 2], &bc, 4);
    const std::string shortstrip = dir / "short.tif";
    write_bytes(shortstrip, ub);
    testing::internal::CaptureStderr();
    if (comp == "none") {
      expect_error([&] { codec().open(shortstrip, Limits{}); }, {shortstrip, "claims 1000x600 pixels but holds only"});
    } else {
      auto r = codec().open(shortstrip, Limits{});
      Image rows(1000, 100, r->info().format);
      EXPECT_NO_THROW(r->read_rows(0, rows.view()));
      expect_error([&] { r->read_rows(300, rows.view()); }, {shortstrip, "strip 2 is truncated or corrupt"});
    }
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  }
}

TEST(IoTiff, WriterRefusesAndCleansUp) {
  TempDir dir;
  const std::string path = dir / "x.tif";
  const Image src = random_image(50, 40, Format{PixelType::U8, 3}, 4);
  WriteOptions opt;
  opt.compression = "jpeg2000";
  EXPECT_EQ(
      expect_error([&] { codec().create(path, 50, 40, src.format(), {}, opt); }, {path, "jpeg2000", "deflate", "lzw"}),
      ErrorKind::InvalidArgument);
  opt = {};
  opt.tiff_tile = {64, 40};
  EXPECT_EQ(expect_error([&] { codec().create(path, 50, 40, src.format(), {}, opt); }, {path, "multiples of 16"}),
            ErrorKind::InvalidArgument);
  {  // abandoned: nothing left behind
    auto w = codec().create(path, 50, 40, src.format(), {}, {});
    w->write_rows(src.view().sub({0, 0, 50, 20}));
  }
  {  // too few rows: finish refuses, nothing left behind
    auto w = codec().create(path, 50, 40, src.format(), {}, {});
    w->write_rows(src.view().sub({0, 0, 50, 39}));
    expect_error([&] { w->finish(); }, {path, "39 of 40"});
  }
  EXPECT_TRUE(fs::is_empty(dir.path)) << fs::directory_iterator(dir.path)->path();
}

// Not a test: write and read a large image, timed (--gtest_also_run_disabled_tests
// --gtest_filter=IoTiff.DISABLED_Speed; TF_TIFF_SPEED_SIDE sets the side, 8000 by default;
// TF_TIFF_SPEED_THREADS the writer's threads, one per core by default).
TEST(IoTiff, DISABLED_Speed) {
  const char* env = std::getenv("TF_TIFF_SPEED_SIDE");
  const int side = env ? std::atoi(env) : 8000;
  TempDir dir;
  // A smooth image with noise, closer to a photo than pure noise.
  Image src(side, side, Format{PixelType::U8, 3});
  std::mt19937 rng(1);
  for (int y = 0; y < side; ++y) {
    auto* p = src.view().row_as<std::uint8_t>(y);
    for (int x = 0; x < side; ++x)
      for (int c = 0; c < 3; ++c)
        p[3 * x + c] = static_cast<std::uint8_t>((x * (c + 1) + y * (3 - c)) / 64 + (rng() & 7));
  }
  const int band = 256;
  for (std::string comp : {"deflate", "zstd", "lzw", "none"})
    for (bool tiled : {false, true}) {
      WriteOptions opt;
      opt.compression = comp;
      if (tiled) opt.tiff_tile = {256, 256};
      if (const char* t = std::getenv("TF_TIFF_SPEED_THREADS")) opt.threads = std::atoi(t);
      const std::string path = dir / "speed.tif";
      auto t0 = std::chrono::steady_clock::now();
      {
        auto w = codec().create(path, side, side, src.format(), {}, opt);
        for (int y = 0; y < side; y += band) w->write_rows(src.view().sub({0, y, side, std::min(band, side - y)}));
        w->finish();
      }
      auto t1 = std::chrono::steady_clock::now();
      Image back(side, side, src.format());
      {
        auto r = codec().open(path, Limits{});
        for (int y = 0; y < side; y += band) r->read_rows(y, back.view().sub({0, y, side, std::min(band, side - y)}));
      }
      auto t2 = std::chrono::steady_clock::now();
      EXPECT_TRUE(same_pixels(src.view(), back.view()));
      std::printf("%dx%d RGB8 %-7s %-6s write %6.2f s  read %6.2f s  %7.1f MB\n", side, side, comp.c_str(),
                  tiled ? "tiles" : "strips", std::chrono::duration<double>(t1 - t0).count(),
                  std::chrono::duration<double>(t2 - t1).count(), fs::file_size(path) / 1e6);
    }
}

}  // namespace
}  // namespace tf

#endif  // TF_HAVE_LIBTIFF
