// JPEG outputs like their inputs: a JPEG's quality (estimated from its quantisation tables) and its
// chroma subsampling are read, kept by default and overridden by --quality / --subsampling, for JPEG
// files and JPEG-compressed TIFFs alike.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "jpeg_maker.hpp"
#include "test_support.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/util/error.hpp"

namespace fs = std::filesystem;
using namespace tf;
using test::TempDir;

namespace {

// A photo-like RGB image: smooth areas and edges, as cameras see them (noise compresses like nothing real).
Image photo(int w, int h, std::uint32_t seed) { return make_test_image(w, h, Format{PixelType::U8, 3}, seed); }

JpegCoding coding_of_file(const std::string& path) { return open_image(path)->info().jpeg; }

}  // namespace

#ifdef TF_HAVE_LIBJPEG

TEST(JpegCoding, QualityIsEstimatedExactlyForLibjpegTables) {
  const Image img = photo(96, 64, test::test_seed(3));
  TempDir dir;
  for (int q : {5, 25, 50, 75, 89, 90, 92, 95, 100}) {
    SCOPED_TRACE(q);
    const auto bytes = test::libjpeg_encode(img.view(), {q, 2, 2});
    EXPECT_EQ(jpeg_stream_info(bytes, "q.jpg").coding.quality, q);
    test::write_bytes(dir / "q.jpg", bytes);
    EXPECT_EQ(coding_of_file(dir / "q.jpg").quality, q);
  }
}

TEST(JpegCoding, SubsamplingIsReadAsWritten) {
  const Image img = photo(80, 48, test::test_seed(4));
  struct Case {
    int h, v;
    ChromaSubsampling want;
  };
  for (const Case c : {Case{1, 1, ChromaSubsampling::S444}, Case{2, 1, ChromaSubsampling::S422},
                       Case{2, 2, ChromaSubsampling::S420}}) {
    const auto bytes = test::libjpeg_encode(img.view(), {88, c.h, c.v});
    EXPECT_EQ(jpeg_stream_info(bytes, "s.jpg").coding.subsampling, c.want) << c.h << "x" << c.v;
  }
  const Image gray = make_test_image(40, 40, Format{PixelType::U8, 1}, 5);
  const auto g = test::libjpeg_encode(gray.view(), {70, 2, 2});
  EXPECT_EQ(jpeg_stream_info(g, "g.jpg").coding.subsampling, ChromaSubsampling::FromInput) << "gray has no chroma";
  EXPECT_EQ(jpeg_stream_info(g, "g.jpg").coding.quality, 70);
}

TEST(JpegCoding, TheWriterTakesTheOptionsQualityAndSubsampling) {
  const Image img = photo(64, 48, test::test_seed(6));
  TempDir dir;
  WriteOptions o;
  EXPECT_EQ(jpeg_quality(o), kDefaultQuality) << "0 = the input's, else the default";
  EXPECT_EQ(jpeg_subsampling(o, 3), ChromaSubsampling::S444) << "92: full-resolution colour";
  o.quality = 80;
  EXPECT_EQ(jpeg_subsampling(o, 3), ChromaSubsampling::S420);
  for (auto s : {ChromaSubsampling::S444, ChromaSubsampling::S422, ChromaSubsampling::S420}) {
    o.subsampling = s;
    encode_file(dir / "w.jpg", img.view(), o);
    const JpegCoding c = coding_of_file(dir / "w.jpg");
    EXPECT_EQ(c.quality, 80);
    EXPECT_EQ(c.subsampling, s) << to_string(s);
    // The in-memory encoder (TurboJPEG) codes the same.
    if (have_turbojpeg())
      EXPECT_EQ(jpeg_stream_info(encode_jpeg_with("turbojpeg", img.view(), 80, s), "t").coding.subsampling, s);
  }
}

TEST(JpegCoding, KeepInputCodingFillsOnlyWhatWasLeftToTheInput) {
  const JpegCoding input{85, ChromaSubsampling::S422, false};
  WriteOptions o;
  keep_input_coding(o, input);
  EXPECT_EQ(o.quality, 85);
  EXPECT_EQ(o.subsampling, ChromaSubsampling::S422);
  WriteOptions chosen;
  chosen.quality = 60;
  chosen.subsampling = ChromaSubsampling::S444;
  keep_input_coding(chosen, input);
  EXPECT_EQ(chosen.quality, 60);
  EXPECT_EQ(chosen.subsampling, ChromaSubsampling::S444);
  WriteOptions from_png;
  keep_input_coding(from_png, JpegCoding{});
  EXPECT_EQ(jpeg_quality(from_png), kDefaultQuality);
  EXPECT_EQ(parse_subsampling("4:2:0"), ChromaSubsampling::S420);
  EXPECT_EQ(parse_subsampling("422"), ChromaSubsampling::S422);
  EXPECT_THROW((void)parse_subsampling("411"), Error);
}

TEST(JpegCoding, ApplyKeepsTheInputsQualityAndSubsamplingUnlessAsked) {
  TempDir dir;
  const std::string in = dir / "camera.jpg";
  test::write_bytes(in, test::libjpeg_encode(photo(640, 480, test::test_seed(7)).view(), {90, 2, 2}));
  ASSERT_EQ(test::run_cli("apply " + in + " " + (dir / "out.jpg") + " --filter gaussian:sigma=1.5"), 0);
  const JpegCoding kept = coding_of_file(dir / "out.jpg");
  EXPECT_EQ(kept.quality, 90);
  EXPECT_EQ(kept.subsampling, ChromaSubsampling::S420);
  EXPECT_LE(fs::file_size(dir / "out.jpg"), fs::file_size(in)) << "a blurred photo at the same coding is smaller";

  ASSERT_EQ(test::run_cli("apply " + in + " " + (dir / "o2.jpg") +
                          " --filter gaussian:sigma=1.5 --quality 70 --subsampling 444"),
            0);
  const JpegCoding asked = coding_of_file(dir / "o2.jpg");
  EXPECT_EQ(asked.quality, 70);
  EXPECT_EQ(asked.subsampling, ChromaSubsampling::S444);

  // Not a JPEG input: the default quality, and its rule for the subsampling.
  encode_file(dir / "in.png", photo(64, 48, 8).view());
  ASSERT_EQ(test::run_cli("apply " + (dir / "in.png") + " " + (dir / "o3.jpg") + " --filter box:radius=1"), 0);
  EXPECT_EQ(coding_of_file(dir / "o3.jpg").quality, kDefaultQuality);
  EXPECT_EQ(coding_of_file(dir / "o3.jpg").subsampling, ChromaSubsampling::S444);
}

TEST(JpegCoding, BatchKeepsEachInputsCoding) {
  TempDir dir;
  const Image img = photo(320, 240, test::test_seed(9));
  test::write_bytes(dir / "in/a.jpg", test::libjpeg_encode(img.view(), {90, 2, 2}));
  test::write_bytes(dir / "in/b.jpg", test::libjpeg_encode(img.view(), {75, 2, 1}));
  ASSERT_EQ(test::run_cli("batch " + (dir / "in") + " " + (dir / "out") + " --filter gaussian:sigma=1.5"), 0);
  EXPECT_EQ(coding_of_file(dir / "out/a.jpg").quality, 90);
  EXPECT_EQ(coding_of_file(dir / "out/a.jpg").subsampling, ChromaSubsampling::S420);
  EXPECT_EQ(coding_of_file(dir / "out/b.jpg").quality, 75);
  EXPECT_EQ(coding_of_file(dir / "out/b.jpg").subsampling, ChromaSubsampling::S422);
}

#endif  // TF_HAVE_LIBJPEG

#if defined(TF_HAVE_LIBJPEG) && defined(TF_HAVE_LIBTIFF)

TEST(JpegCoding, JpegInTiffKeepsItsQualitySubsamplingAndPhotometric) {
  TempDir dir;
  const Image img = photo(200, 120, test::test_seed(10));
  WriteOptions ycbcr;
  ycbcr.compression = "jpeg";
  ycbcr.quality = 80;
  encode_file(dir / "ycbcr.tif", img.view(), ycbcr);
  JpegCoding c = coding_of_file(dir / "ycbcr.tif");
  EXPECT_EQ(c.quality, 80);
  EXPECT_EQ(c.subsampling, ChromaSubsampling::S420);
  EXPECT_FALSE(c.rgb);

  WriteOptions rgb = ycbcr;
  rgb.quality = 85;
  rgb.jpeg_rgb = true;
  encode_file(dir / "rgb.tif", img.view(), rgb);
  c = coding_of_file(dir / "rgb.tif");
  EXPECT_EQ(c.quality, 85);
  EXPECT_TRUE(c.rgb);

  ASSERT_EQ(test::run_cli("apply " + (dir / "rgb.tif") + " " + (dir / "rgb-out.tif") + " --filter box:radius=1"), 0);
  c = coding_of_file(dir / "rgb-out.tif");
  EXPECT_TRUE(c.rgb) << "an RGB JPEG-in-TIFF stays RGB";
  EXPECT_EQ(c.quality, 85);
  ASSERT_EQ(test::run_cli("apply " + (dir / "ycbcr.tif") + " " + (dir / "y-out.tif") + " --filter box:radius=1"), 0);
  c = coding_of_file(dir / "y-out.tif");
  EXPECT_FALSE(c.rgb);
  EXPECT_EQ(c.quality, 80);
  EXPECT_EQ(c.subsampling, ChromaSubsampling::S420);
}

#endif
