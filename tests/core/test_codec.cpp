// Codec round trips and bad files at the decoder level.
#include <fstream>

#include "test_support.hpp"
#include "tilefilter/codec.hpp"
#include "tilefilter/error.hpp"

namespace tf {
namespace {

std::vector<char> read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void write_all(const std::string& p, const std::vector<char>& bytes) {
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

ErrorKind kind_of(const std::string& path, const Limits& limits = {}) {
  try {
    decode_file(path, limits);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << "message must name the file: " << e.what();
    return e.kind();
  }
  ADD_FAILURE() << path << " decoded";
  return ErrorKind::Internal;
}

TEST(Codec, LosslessRoundTrips8Bit) {
  test::TempDir dir;
  for (int channels : {1, 3, 4})
    for (const char* ext : {".png", ".bmp", ".tga"}) {
      const Image src = test::random_image(67, 29, Format{PixelType::U8, channels}, 100 + channels);
      const auto path = dir / (std::string("rt") + std::to_string(channels) + ext);
      encode_file(path, src.view());
      const Image back = decode_file(path);
      if (std::string(ext) == ".bmp" && channels == 1) continue;  // stb writes gray BMP as RGB
      EXPECT_TRUE(same_pixels(back.view(), src.view())) << path;
    }
}

TEST(Codec, JpegIsCloseAndStb) {
  test::TempDir dir;
  const Image src = make_test_image(128, 96, Format{PixelType::U8, 3}, 3);
  encode_file(dir / "a.jpg", src.view(), {95});
  const Image back = decode_file(dir / "a.jpg");
  EXPECT_EQ(back.format(), src.format());
  EXPECT_LT(test::compare(back.view(), src.view()).max_abs, 40);
  EXPECT_EQ(codec_for("x.JPG"), "stb");
}

TEST(Codec, SixteenBitAndFloatRoundTripLosslessly) {
  if (!have_opencv_codecs()) GTEST_SKIP() << "16-bit PNG and float TIFF output need OpenCV, not in this build";
  test::TempDir dir;
  for (int channels : {1, 3, 4}) {
    const Image u16 = test::random_image(45, 33, Format{PixelType::U16, channels}, 7 + channels);
    encode_file(dir / "a.png", u16.view());
    EXPECT_TRUE(same_pixels(decode_file(dir / "a.png").view(), u16.view())) << "16-bit PNG, channels " << channels;
    encode_file(dir / "a.tif", u16.view());
    EXPECT_TRUE(same_pixels(decode_file(dir / "a.tif").view(), u16.view())) << "16-bit TIFF, channels " << channels;
    const Image f32 = test::random_image(45, 33, Format{PixelType::F32, channels}, 17 + channels);
    const std::string lossless = dir / (channels == 3 ? "f.pfm" : "f.tif");
    encode_file(lossless, f32.view());
    EXPECT_TRUE(same_pixels(decode_file(lossless).view(), f32.view())) << lossless << ", channels " << channels;
  }
  EXPECT_EQ(codec_for("x.tiff"), "opencv");
}

TEST(Codec, OutputFormatMustHoldTheImage) {
  std::string why;
  EXPECT_FALSE(can_encode("x.jpg", Format{PixelType::F32, 3}, &why));
  EXPECT_FALSE(why.empty());
  EXPECT_FALSE(can_encode("x.xyz", Format{PixelType::U8, 3}, &why));
  EXPECT_NE(why.find("unknown output format"), std::string::npos);
  EXPECT_TRUE(can_encode("x.png", Format{PixelType::U8, 4}));
}

TEST(Codec, BadFilesGiveClearErrors) {
  test::TempDir dir;
  const Image src = make_test_image(300, 200, Format{PixelType::U8, 3}, 4);
  encode_file(dir / "ok.png", src.view());
  encode_file(dir / "ok.jpg", src.view());
  const auto png = read_all(dir / "ok.png"), jpg = read_all(dir / "ok.jpg");
  write_all(dir / "trunc.png", {png.begin(), png.begin() + png.size() / 2});
  write_all(dir / "trunc.jpg", {jpg.begin(), jpg.begin() + jpg.size() / 2});
  write_all(dir / "empty.png", {});
  std::ofstream(dir / "text.png") << "this is not an image\n";
  std::filesystem::create_directory(dir / "folder.png");

  EXPECT_EQ(kind_of(dir / "missing.png"), ErrorKind::Io);
  EXPECT_EQ(kind_of(dir / "folder.png"), ErrorKind::Io);
  EXPECT_EQ(kind_of(dir / "empty.png"), ErrorKind::Decode);
  EXPECT_EQ(kind_of(dir / "trunc.png"), ErrorKind::Decode);
  EXPECT_EQ(kind_of(dir / "trunc.jpg"), ErrorKind::Decode);
  EXPECT_EQ(kind_of(dir / "text.png"), ErrorKind::Decode);
  Limits small;
  small.max_pixels = 1000;
  EXPECT_EQ(kind_of(dir / "ok.png", small), ErrorKind::Limit);
  Limits tiny_file;
  tiny_file.max_file_bytes = 100;
  EXPECT_EQ(kind_of(dir / "ok.png", tiny_file), ErrorKind::Limit);
}

TEST(Codec, HugeClaimIsRefusedBeforeAllocating) {
  // A valid PNG header claiming 100000 x 100000 pixels, then nothing: must fail on the limit.
  const unsigned char header[] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                                  0, 0x01, 0x86, 0xA0, 0, 0x01, 0x86, 0xA0, 8, 2, 0, 0, 0, 0, 0, 0, 0};
  try {
    decode_memory(header, "bomb.png");
    FAIL() << "decoded a bomb";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Limit) << e.what();
    EXPECT_NE(std::string(e.what()).find("bomb.png"), std::string::npos);
  }
}

TEST(Codec, HeaderSizesThatOverflowAreRefused) {
  // Found by fuzz_decode: 0xFFFFFFFF x 0xFFFFFFFF overflowed the pixel count.
  const unsigned char header[] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                                  0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 8, 6, 0, 0, 0, 0, 0, 0, 0};
  try {
    decode_memory(header, "overflow.png");
    FAIL() << "decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Limit) << e.what();
  }
}

TEST(Codec, WritesAtomicallyAndLeavesNoTemporaries) {
  test::TempDir dir;
  const Image src = make_test_image(64, 64, Format{PixelType::U8, 3}, 5);
  encode_file(dir / "a.png", src.view());
  for (const auto& e : std::filesystem::directory_iterator(dir.path))
    EXPECT_EQ(e.path().filename().string(), "a.png");
  EXPECT_THROW(encode_file(dir / "no/such/folder/a.png", src.view()), Error);
}

}  // namespace
}  // namespace tf
