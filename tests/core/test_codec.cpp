// Codec round trips and bad files at the decoder level.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <thread>

#include <fmt/format.h>

#ifdef TF_HAVE_TURBOJPEG
#include <turbojpeg.h>
#endif

#include "io/codec_opencv.hpp"
#include "test_support.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/atomic_write.hpp"
#include "tilefilter/util/error.hpp"

namespace tf {
namespace {

std::vector<char> read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// An input fuzz_decode once found, kept in tests/fuzz/regressions/decode/.
std::vector<char> regression_input(const std::string& file) {
  return read_all(std::string(TF_SOURCE_DIR) + "/tests/fuzz/regressions/decode/" + file);
}

// Bytes held as chars (a file read whole, a string), as the decoders take them.
template <class Chars> std::span<const unsigned char> bytes_of(const Chars& c) {
  return {reinterpret_cast<const unsigned char*>(c.data()), c.size()};
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
  encode_file(dir / "a.jpg", src.view(), quality_only(95));
  const Image back = decode_file(dir / "a.jpg");
  EXPECT_EQ(back.format(), src.format());
  EXPECT_LT(test::compare(back.view(), src.view()).max_abs, 40);
  // Files go to the streaming libraries when built in; TurboJPEG, then stb, otherwise.
  const std::string jpeg = writer_streams("x.jpg") ? "libjpeg" : have_turbojpeg() ? "turbojpeg" : "stb";
  EXPECT_EQ(codec_for("x.JPG"), jpeg);
  EXPECT_EQ(encoder_for("x.jpeg", src.format()), jpeg);
  EXPECT_EQ(codec_for("x.png"), writer_streams("x.png") ? "libpng" : "stb");
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
  EXPECT_EQ(codec_for("x.tiff"), writer_streams("x.tif") ? "libtiff" : "opencv");
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
  // The file-size limit guards formats read into memory whole (streaming readers never hold the file).
  encode_file(dir / "ok.bmp", src.view());
  Limits tiny_file;
  tiny_file.max_file_bytes = 100;
  EXPECT_EQ(kind_of(dir / "ok.bmp", tiny_file), ErrorKind::Limit);
}

TEST(Codec, HugeClaimIsRefusedBeforeAllocating) {
  // A valid PNG header claiming 100000 x 100000 pixels, then nothing: must fail on the limit.
  const unsigned char header[] = {0x89, 'P',  'N',  'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 'I', 'H', 'D', 'R', 0,
                                  0x01, 0x86, 0xA0, 0,   0x01, 0x86, 0xA0, 8,    2, 0, 0, 0,  0,   0,   0,   0};
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
  const unsigned char header[] = {0x89, 'P',  'N',  'G',  0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 'I', 'H', 'D', 'R', 0xFF,
                                  0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 8,    6, 0, 0, 0,  0,   0,   0,   0};
  try {
    decode_memory(header, "overflow.png");
    FAIL() << "decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Limit) << e.what();
  }
}

TEST(Codec, HuffmanTableOverflowIsRefused) {
  // Found by fuzz_decode: a DHT whose counts add up to more than 256 made stb_image write past its
  // arrays (FF FF D8 is a JPEG start for stb, so it reached stb even with TurboJPEG built in).
  // The second file ends inside the table: stb reads the missing counts as zeros.
  for (const char* file : {"stb-huffman-overflow.jpg", "stb-huffman-overflow-short.jpg"}) {
    const auto bytes = regression_input(file);
    ASSERT_FALSE(bytes.empty()) << file;
    try {
      decode_memory(bytes_of(bytes), file);
      ADD_FAILURE() << file << " decoded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Decode) << e.what();
      EXPECT_NE(std::string(e.what()).find("Huffman"), std::string::npos) << e.what();
    }
  }
  // Real JPEGs (with their tables) still decode through the stb path.
  test::TempDir dir;
  encode_file(dir / "ok.jpg", make_test_image(64, 48, Format{PixelType::U8, 3}, 2).view());
  const auto ok = read_all(dir / "ok.jpg");
  EXPECT_NO_THROW(decode_jpeg_with("stb", bytes_of(ok), "ok.jpg"));
}

TEST(Codec, BytesOpenCvIsNotAskedToReadAreRefusedBeforeIt) {
  // Found by fuzz_decode: 874 bytes with "DICM" at offset 128 reached OpenCV's DICOM reader (GDCM),
  // which sized a buffer from a length field at 1.7 GB. Only signatures of the formats OpenCV is
  // here for reach it now.
  const auto bytes = regression_input("opencv-gdcm-huge-length.dcm");
  ASSERT_EQ(bytes.size(), 874u);
  const std::span<const unsigned char> span = bytes_of(bytes);
  EXPECT_FALSE(opencv_codecs::reads_signature(span));
  EXPECT_THROW(decode_memory(span, "dicom.dcm"), Error);
  // Found next: the same bytes starting with OpenEXR's magic. OpenCV asks GDCM before its OpenEXR
  // reader, so "DICM" at offset 128 keeps bytes from OpenCV whatever their first ones.
  const auto exr = regression_input("opencv-gdcm-behind-exr-magic.exr");
  ASSERT_EQ(exr.size(), 796u);
  const std::span<const unsigned char> exr_span = bytes_of(exr);
  EXPECT_FALSE(opencv_codecs::reads_signature(exr_span));
  EXPECT_THROW(decode_memory(exr_span, "dicom.exr"), Error);
  const unsigned char tiff[] = {'I', 'I', 42, 0, 8, 0, 0, 0};
  const unsigned char webp[] = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P'};
  const unsigned char pfm[] = {'P', 'f', '\n'};
  EXPECT_TRUE(opencv_codecs::reads_signature(tiff));
  EXPECT_TRUE(opencv_codecs::reads_signature(webp));
  EXPECT_TRUE(opencv_codecs::reads_signature(pfm));
}

TEST(Codec, CutRadianceRleIsRefusedNotLoopedOn) {
  // Found by fuzz_decode: stb's HDR reader loops forever on a run of length 0, which is what it
  // reads past the end of a cut file. Every build reads .hdr through stb, behind a scanline walk.
  const auto bytes = regression_input("stb-hdr-rle-cut.hdr");
  ASSERT_FALSE(bytes.empty());
  EXPECT_THROW(decode_memory(bytes_of(bytes), "cut.hdr"), Error);
  // Found next: the same cut data behind a header line of NULs, which ends stb's header (it tests
  // the line's first char) and did not end the walk's.
  const auto nul = regression_input("stb-hdr-nul-header-line.hdr");
  ASSERT_EQ(nul.size(), 249u);
  try {
    decode_memory(bytes_of(nul), "nul.hdr");
    ADD_FAILURE() << "decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nul.hdr"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Radiance"), std::string::npos) << e.what();
  }
}

TEST(Codec, RadianceFilesDecodeAndCutOnesAreRefused) {
  test::TempDir dir;
  // stb writes run-length scanlines for widths 8..32767 and flat quads otherwise: both shapes.
  for (const int width : {67, 5}) {
    const Image src = make_test_image(width, 9, Format{PixelType::F32, 3}, 40 + width);  // 0..1: RGBE has no sign
    const auto path = dir / fmt::format("w{}.hdr", width);
    encode_file(path, src.view());
    const Image back = decode_file(path);
    ASSERT_EQ(back.format(), src.format());
    EXPECT_LT(test::compare(back.view(), src.view()).max_abs, 0.01) << path;  // RGBE keeps ~8 bits of mantissa
    const auto whole = read_all(path);
    for (std::size_t keep : {whole.size() - 1, whole.size() - 7, whole.size() * 2 / 3, whole.size() / 2}) {
      write_all(dir / "cut.hdr", {whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(keep)});
      EXPECT_EQ(kind_of(dir / "cut.hdr"), ErrorKind::Decode) << path << " cut to " << keep << " bytes";
    }
  }
}

TEST(Codec, BadRadianceHeadersLeakNoFileDescriptors) {
  // Found by fuzz_decode ("Too many open files"): OpenCV 4.6's Radiance reader leaked its FILE on
  // every bad header; a long batch of bad .hdr files would have run out of descriptors.
  auto open_fds = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/fd"), std::filesystem::directory_iterator{});
  };
  const auto before = open_fds();
  for (int i = 0; i < 300; ++i) {
    const std::string bad = i % 2 ? "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y x\n" : "#?RGBE\n\n+X 8 -Y 8\n";
    EXPECT_THROW(decode_memory(bytes_of(bad), "bad.hdr"), Error);
  }
  EXPECT_LE(open_fds(), before + 2);
}

TEST(Codec, CutPnmIsRefusedNotFilledFromTheHeap) {
  // Debian's stb_image ignores a short read in its P5 / P6 reader: a cut file decoded, its missing pixels
  // whatever the allocation held.
  std::string pixels;
  for (int i = 0; i < 7 * 5 * 3 * 2; ++i) pixels.push_back(static_cast<char>(i * 37 + 11));
  const std::string ppm = "P6\n# a comment\n7 5\n255\n" + pixels.substr(0, 7 * 5 * 3);
  const Image whole = decode_memory(bytes_of(ppm), "whole.ppm");
  ASSERT_EQ(whole.view().width, 7);
  EXPECT_EQ(std::to_integer<unsigned char>(whole.view().row(4)[20]), static_cast<unsigned char>(ppm.back()));
  const std::pair<std::string, std::string> cut[] = {
      {ppm.substr(0, ppm.size() - 1), "truncated PNM (104 bytes of pixels where 7x5 needs 105)"},
      {"P5 7 5 65535\n" + pixels.substr(0, 69), "truncated PNM (69 bytes of pixels where 7x5 needs 70)"},
      {"P6\n7 5\n255\n", "truncated PNM (0 bytes"},
  };
  for (const auto& [bytes, why] : cut) {
    try {
      decode_memory(bytes_of(bytes), "cut.ppm");
      ADD_FAILURE() << "decoded: " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cut.ppm: " + why), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(decode_memory(bytes_of("P5 7 5 65535\n" + pixels.substr(0, 70)), "p5.pgm").view().format.type,
            PixelType::U16);
}

TEST(Codec, PnmHeaderNumberPastTheLargestIntIsRefusedBeforeStbReadsIt) {
  // stb reads each header number into an int digit by digit without a bound (undefined behaviour, found by
  // fuzz_decode), and stbi_info reads the header before anything else.
  const std::vector<char> found = regression_input("stb-pnm-number-past-int.pgm");
  const std::string bads[] = {std::string(found.begin(), found.end()), "P6 2147483648 1\n255\n",
                              "P5 7 5 99999999999\n"};
  for (const std::string& bad : bads) {
    try {
      decode_memory(bytes_of(bad), "big.pgm");
      ADD_FAILURE() << "decoded: " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("big.pgm: corrupt PNM header (a number past the largest int)"),
                std::string::npos)
          << e.what();
    }
  }
  // The largest int itself is stb's to refuse, as before.
  EXPECT_THROW(decode_memory(bytes_of(std::string("P6 2147483647 1\n255\n")), "wide.ppm"), Error);
}

TEST(Codec, CutUncompressedTgaIsRefusedNotFilledFromTheHeap) {
  // The same short read in stb's reader of uncompressed TGA rows.
  std::string tga(18, '\0');
  tga[0] = 3;                // an image ID of 3 bytes
  tga[2] = 2;                // uncompressed true colour
  tga[12] = 7, tga[14] = 5;  // 7 x 5
  tga[16] = 24;              // BGR
  tga += "id!";
  for (int i = 0; i < 7 * 5 * 3; ++i) tga.push_back(static_cast<char>(i * 29 + 3));
  const Image whole = decode_memory(bytes_of(tga), "whole.tga");
  ASSERT_EQ(whole.view().height, 5);
  EXPECT_EQ(std::to_integer<unsigned char>(whole.view().row(0)[18]),
            static_cast<unsigned char>(tga.back()));  // R of the last pixel, top row (bottom-up, BGR)
  try {
    decode_memory(bytes_of(tga.substr(0, tga.size() - 4)), "cut.tga");
    ADD_FAILURE() << "a cut TGA decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cut.tga: truncated TGA (101 bytes of pixels where 7x5 needs 105)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Codec, CutBmpIsRefusedNotFilledWithBlack) {
  // stb reads past a cut BMP's end as zeros: the missing rows came out black.
  const Image rgb = test::random_image(7, 5, Format{PixelType::U8, 3}, 31);
  test::TempDir dir;
  encode_file(dir / "a.bmp", rgb.view());
  const std::vector<unsigned char> bmp = test::read_bytes(dir / "a.bmp");
  ASSERT_EQ(bmp.size(), 54u + 5 * 24);
  EXPECT_TRUE(same_pixels(decode_memory(bmp, "whole.bmp").view(), rgb.view()));
  const std::size_t end = bmp.size();  // 54 bytes of header, then 5 rows of 21 bytes padded to 24
  try {
    decode_memory(std::span(bmp).first(end - 30), "cut.bmp");
    ADD_FAILURE() << "a cut BMP decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cut.bmp: truncated BMP"), std::string::npos) << e.what();
  }
  // A last row without its padding is whole.
  EXPECT_TRUE(same_pixels(decode_memory(std::span(bmp).first(end - 3), "unpadded.bmp").view(), rgb.view()));
}

TEST(Codec, BadPfmFilesAreRefusedWithoutLeavingOpenCvTemporaries) {
  // Found in CI's /tmp: OpenCV 4.6 decodes a PFM through a temporary file and left it behind whenever the
  // file made it throw (fuzz_decode left about a hundred a run).
  if (!have_opencv_codecs()) GTEST_SKIP() << "PFM needs OpenCV, not in this build";
  test::TempDir dir;
  const char* old = std::getenv("OPENCV_TEMP_PATH");
  const std::string kept = old ? old : "";
  ::setenv("OPENCV_TEMP_PATH", dir.path.c_str(), 1);
  const Image f32 = test::random_image(7, 5, Format{PixelType::F32, 3}, 21);
  encode_file(dir / "good.pfm", f32.view());
  const std::vector<char> good = read_all(dir / "good.pfm");
  std::filesystem::remove(dir / "good.pfm");
  const std::string pixels(good.end() - 7 * 5 * 3 * 4, good.end());
  const std::pair<std::string, std::string> bad[] = {
      {"PF 7 5\n-1\n" + pixels, "no line break"},
      {"PF\n7 5\n-1", "header ends"},
      {"PF\n0 5\n-1\n" + pixels, "size"},
      {"PF\n99999999 99999999\n-1\n", "exceeds the limit"},
      {"PF\n7 5\n0\n" + pixels, "scale"},
      {"PF\n7 5\n-1\n" + pixels.substr(0, 100), "truncated PFM (100 bytes of pixels where 7x5 needs 420)"},
  };
  for (const auto& [bytes, why] : bad) {
    try {
      decode_memory(bytes_of(bytes), "bad.pfm");
      ADD_FAILURE() << "decoded: " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.pfm"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(same_pixels(decode_memory(bytes_of(good), "good.pfm").view(), f32.view()));
  const auto left = std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator{});
  if (old) ::setenv("OPENCV_TEMP_PATH", kept.c_str(), 1);
  else ::unsetenv("OPENCV_TEMP_PATH");
  EXPECT_EQ(left, 0) << "files OpenCV left in its temporary folder";
}

TEST(Codec, PngWithEmptyFirstIdatDecodes) {
  // Found by fuzz_decode: an IDAT chunk of length 0 before the data made Debian's stb_image compute
  // NULL + 0 (UBSan). Empty IDAT chunks are legal; they are left out before stb reads the file.
  const auto bytes = regression_input("stb-png-empty-first-idat.png");
  ASSERT_FALSE(bytes.empty());
  try {
    decode_memory(bytes_of(bytes), "fuzz.png");
  } catch (const Error& e) {  // the fuzzed data may be corrupt; a clear error is fine, a crash is not
    EXPECT_EQ(e.kind(), ErrorKind::Decode) << e.what();
  }
  // A valid PNG with an empty IDAT spliced in after IHDR decodes to the same pixels.
  test::TempDir dir;
  const Image src = test::random_image(31, 17, Format{PixelType::U8, 3}, 5);
  encode_file(dir / "a.png", src.view());
  auto png = read_all(dir / "a.png");
  const std::size_t after_ihdr = 8 + 12 + 13;
  const char empty_idat[] = {0, 0, 0, 0, 'I', 'D', 'A', 'T', '\x35', '\xAF', '\x06', '\x1E'};
  png.insert(png.begin() + static_cast<std::ptrdiff_t>(after_ihdr), std::begin(empty_idat), std::end(empty_idat));
  const Image back = decode_memory(bytes_of(png), "spliced.png");
  EXPECT_TRUE(same_pixels(back.view(), src.view()));
}

TEST(Codec, ACorruptJpegDoesNotChangeTheNextDecode) {
  // Seen in batch: a corrupt JPEG left TurboJPEG's per-thread decompressor in a state that changed
  // the pixels of the next file decoded on that thread.
  test::TempDir dir;
  encode_file(dir / "good.jpg", test::random_image(640, 360, Format{PixelType::U8, 3}, 40).view(), quality_only(90));
  const auto good = read_all(dir / "good.jpg");
  const std::span<const unsigned char> good_bytes = bytes_of(good);
  const Image fresh = decode_memory(good_bytes, "good.jpg");
  std::mt19937 rng(7);
  std::vector<unsigned char> corrupt(good.size());
  for (auto& b : corrupt) b = static_cast<unsigned char>(rng());
  corrupt[0] = 0xFF, corrupt[1] = 0xD8, corrupt[2] = 0xFF;
  EXPECT_THROW(decode_memory(corrupt, "corrupt.jpg"), Error);
  EXPECT_TRUE(same_pixels(decode_memory(good_bytes, "good.jpg").view(), fresh.view()));
}

TEST(Codec, WritesAtomicallyAndLeavesNoTemporaries) {
  test::TempDir dir;
  const Image src = make_test_image(64, 64, Format{PixelType::U8, 3}, 5);
  encode_file(dir / "a.png", src.view());
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) EXPECT_EQ(e.path().filename().string(), "a.png");
  EXPECT_THROW(encode_file(dir / "no/such/folder/a.png", src.view()), Error);
}

// Unnamed files given their name (or, for TIFF and where the file system has none, temporary names
// renamed): a new name, over an existing file, and a writer abandoned before finish().
TEST(Codec, OutputsAppearWholeUnderTheirNameOnly) {
  test::TempDir dir;
  const Image a = make_test_image(64, 48, Format{PixelType::U8, 3}, 6),
              b = make_test_image(64, 48, Format{PixelType::U8, 3}, 7);
  auto names = [&] {
    std::vector<std::string> n;
    for (const auto& e : std::filesystem::directory_iterator(dir.path)) n.push_back(e.path().filename().string());
    std::sort(n.begin(), n.end());
    return n;
  };
  for (const char* name : {"x.jpg", "x.png", "x.tif"}) {
    encode_file(dir / name, a.view());
    const Image first = decode_file(dir / name);
    encode_file(dir / name, b.view());  // over the existing file
    EXPECT_FALSE(same_pixels(decode_file(dir / name).view(), first.view())) << name;
    {
      auto w = create_image(dir / name, 64, 48, a.format(), {}, {});
      w->write_rows(a.view().sub({0, 0, 64, 10}));
    }  // abandoned: the last whole file stays, nothing else appears
    const Image kept = decode_file(dir / name);
    EXPECT_FALSE(same_pixels(kept.view(), first.view())) << name;
    EXPECT_EQ(kept.height(), 48) << name;
  }
  EXPECT_EQ(names(), (std::vector<std::string>{"x.jpg", "x.png", "x.tif"}));
  std::vector<unsigned char> bytes(1000);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 7);
  write_file_atomically(dir / "y.bin", bytes);
  write_file_atomically(dir / "y.bin", std::span<const unsigned char>(bytes).first(10));
  EXPECT_EQ(std::filesystem::file_size(dir / "y.bin"), 10u);
  EXPECT_EQ(names(), (std::vector<std::string>{"x.jpg", "x.png", "x.tif", "y.bin"}));
}

// ---- TurboJPEG next to stb -------------------------------------------------------------------

std::span<const unsigned char> as_span(const std::vector<unsigned char>& v) { return {v.data(), v.size()}; }

// The sampling factors of the first component (luma) in the frame header: 0x11 = 4:4:4, 0x22 = 4:2:0.
int luma_sampling(const std::vector<unsigned char>& jpeg) {
  for (std::size_t i = 2; i + 11 < jpeg.size(); ++i)
    if (jpeg[i] == 0xFF && (jpeg[i + 1] == 0xC0 || jpeg[i + 1] == 0xC1 || jpeg[i + 1] == 0xC2)) return jpeg[i + 11];
  return -1;
}

// Counts what goes through it, so a test can tell that nothing was allocated.
struct CountingAllocator {
  std::atomic<int> calls{0};
  PixelAllocator alloc{[this](std::size_t n) {
                         ++calls;
                         return default_allocator().allocate(n);
                       },
                       [](void* p) { default_allocator().release(p); }};
};

#define REQUIRE_TURBOJPEG() \
  if (!have_turbojpeg()) GTEST_SKIP() << "TurboJPEG (libturbojpeg0-dev) not in this build: JPEG goes through stb"

TEST(Codec, TurboJpegDecodesLikeStb) {
  REQUIRE_TURBOJPEG();
  // Both use an integer IDCT after libjpeg's and triangle ("fancy") chroma upsampling, with
  // different rounding there and in YCbCr -> RGB: measured max |diff| 1 for gray, 2 at 4:4:4
  // (quality >= 90) and 3 at 4:2:0.
  for (int channels : {1, 3})
    for (int quality : {95, 75})
      for (const char* encoder : {"stb", "turbojpeg"}) {
        SCOPED_TRACE(fmt::format("{} channel(s), quality {}, written by {}", channels, quality, encoder));
        const Image src = make_test_image(203, 117, Format{PixelType::U8, channels}, 11);
        const auto jpeg = encode_jpeg_with(encoder, src.view(), quality);
        const Image by_stb = decode_jpeg_with("stb", as_span(jpeg), "a.jpg");
        const Image by_turbo = decode_jpeg_with("turbojpeg", as_span(jpeg), "a.jpg");
        ASSERT_EQ(by_turbo.format(), by_stb.format());  // stb writes gray as YCbCr: 3 channels then
        ASSERT_EQ(by_turbo.width(), 203);
        ASSERT_EQ(by_turbo.height(), 117);
        EXPECT_LE(test::compare(by_turbo.view(), by_stb.view()).max_abs, quality >= 90 ? 2 : 3);
      }
}

TEST(Codec, TurboJpegRoundTripIsCloseAndHonoursQuality) {
  REQUIRE_TURBOJPEG();
  test::TempDir dir;
  const Image src = make_test_image(301, 199, Format{PixelType::U8, 3}, 12);
  encode_file(dir / "a.jpg", src.view(), quality_only(95));
  const Image back = decode_file(dir / "a.jpg");
  EXPECT_EQ(back.format(), src.format());
  EXPECT_LT(test::compare(back.view(), src.view()).max_abs, 40);

  const auto q95 = encode_jpeg_with("turbojpeg", src.view(), 95), q90 = encode_jpeg_with("turbojpeg", src.view(), 90);
  const auto q89 = encode_jpeg_with("turbojpeg", src.view(), 89), q50 = encode_jpeg_with("turbojpeg", src.view(), 50);
  EXPECT_GT(q95.size(), q89.size());
  EXPECT_GT(q89.size(), q50.size());
  EXPECT_EQ(luma_sampling(q95), 0x11);  // 4:4:4 from quality 90
  EXPECT_EQ(luma_sampling(q90), 0x11);
  EXPECT_EQ(luma_sampling(q89), 0x22);  // 4:2:0 below
  EXPECT_EQ(luma_sampling(q50), 0x22);
  const Image low = decode_jpeg_with("turbojpeg", as_span(q50), "q50.jpg");
  EXPECT_LT(test::compare(low.view(), src.view()).max_abs, 120);
}

TEST(Codec, TurboJpegIgnoresAlphaLikeStb) {
  REQUIRE_TURBOJPEG();
  const Image rgba = test::random_image(67, 45, Format{PixelType::U8, 4}, 13);
  Image rgb(67, 45, Format{PixelType::U8, 3});
  for (int y = 0; y < 45; ++y)
    for (int x = 0; x < 67; ++x)
      for (int c = 0; c < 3; ++c)
        rgb.view().row_as<std::uint8_t>(y)[x * 3 + c] = rgba.view().row_as<std::uint8_t>(y)[x * 4 + c];
  EXPECT_EQ(encode_jpeg_with("turbojpeg", rgba.view(), 92), encode_jpeg_with("turbojpeg", rgb.view(), 92));
  test::TempDir dir;
  encode_file(dir / "rgba.jpg", rgba.view());
  EXPECT_EQ(decode_file(dir / "rgba.jpg").format(), (Format{PixelType::U8, 3}));
}

TEST(Codec, GrayJpegDecodesToOneChannel) {
  REQUIRE_TURBOJPEG();
  test::TempDir dir;
  const Image gray = make_test_image(97, 61, Format{PixelType::U8, 1}, 14);
  encode_file(dir / "g.jpg", gray.view());  // TurboJPEG writes a one-component JPEG (stb writes YCbCr)
  const Image back = decode_file(dir / "g.jpg");
  EXPECT_EQ(back.format(), (Format{PixelType::U8, 1}));
  EXPECT_LT(test::compare(back.view(), gray.view()).max_abs, 40);
  const auto bytes = read_all(dir / "g.jpg");
  const std::vector<unsigned char> jpeg(bytes.begin(), bytes.end());
  const Image by_stb = decode_jpeg_with("stb", as_span(jpeg), "g.jpg");
  EXPECT_EQ(by_stb.format(), back.format());
  EXPECT_LE(test::compare(by_stb.view(), back.view()).max_abs, 1);
}

TEST(Codec, TruncatedJpegIsRefusedByTurboJpeg) {
  REQUIRE_TURBOJPEG();
  const Image src = make_test_image(300, 200, Format{PixelType::U8, 3}, 15);
  const auto jpeg = encode_jpeg_with("turbojpeg", src.view(), 90);
  auto refuses = [](const std::vector<unsigned char>& bytes, const char* word) {
    try {
      decode_jpeg_with("turbojpeg", as_span(bytes), "cut.jpg");
      ADD_FAILURE() << "decoded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Decode) << e.what();
      EXPECT_NE(std::string(e.what()).find("cut.jpg"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  };
  // Cut in half: no end-of-image marker.
  refuses({jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(jpeg.size() / 2)}, "truncated");
  // Cut in half and the end marker put back: libjpeg only warns ("premature end of data segment"),
  // which must still be an error, not a half-grey picture.
  std::vector<unsigned char> reterminated(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(jpeg.size() / 2));
  reterminated.insert(reterminated.end(), {0xFF, 0xD9});
  refuses(reterminated, "truncated");
  // Entropy-coded data overwritten with garbage, end marker intact.
  std::vector<unsigned char> garbled = jpeg;
  std::mt19937 rng(15);
  for (std::size_t i = jpeg.size() / 2; i < jpeg.size() / 2 + 400; ++i)
    garbled[i] = static_cast<unsigned char>(rng() | 0x80);
  try {
    decode_jpeg_with("turbojpeg", as_span(garbled), "garbled.jpg");
    ADD_FAILURE() << "decoded garbage without a word";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Decode) << e.what();
  }
}

TEST(Codec, TurboJpegAcceptsStrayBytesBetweenSegments) {
  // libjpeg warns "Corrupt JPEG data: 2 extraneous bytes before marker 0xdb" but every pixel is
  // there; stb reads such files too, so they must not become errors.
  REQUIRE_TURBOJPEG();
  const Image src = make_test_image(120, 80, Format{PixelType::U8, 3}, 21);
  const auto clean = encode_jpeg_with("turbojpeg", src.view(), 90);
  std::vector<unsigned char> stray = clean;
  std::size_t dqt = 2;
  while (dqt + 1 < stray.size() && !(stray[dqt] == 0xFF && stray[dqt + 1] == 0xDB)) ++dqt;
  ASSERT_LT(dqt + 1, stray.size());
  stray.insert(stray.begin() + static_cast<std::ptrdiff_t>(dqt), {0x11, 0x22});
  const Image a = decode_jpeg_with("turbojpeg", as_span(clean), "clean.jpg");
  const Image b = decode_jpeg_with("turbojpeg", as_span(stray), "stray.jpg");
  EXPECT_TRUE(same_pixels(a.view(), b.view()));
}

TEST(Codec, HugeJpegClaimIsRefusedBeforeAllocating) {
  // A valid small JPEG whose frame header is changed to claim 60000 x 60000 pixels (3.6 gigapixels,
  // within JPEG's 65500 per side): the limit must fire from the header, before any pixel memory.
  const Image src = make_test_image(64, 48, Format{PixelType::U8, 3}, 16);
  auto jpeg = encode_jpeg_with(have_turbojpeg() ? "turbojpeg" : "stb", src.view(), 90);
  bool patched = false;
  for (std::size_t i = 2; i + 8 < jpeg.size() && !patched; ++i)
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      jpeg[i + 5] = 60000 >> 8, jpeg[i + 6] = 60000 & 0xFF, jpeg[i + 7] = 60000 >> 8, jpeg[i + 8] = 60000 & 0xFF;
      patched = true;
    }
  ASSERT_TRUE(patched);
  for (const char* codec : {"auto", "stb", "turbojpeg"}) {
    if (std::string(codec) == "turbojpeg" && !have_turbojpeg()) continue;
    SCOPED_TRACE(codec);
    CountingAllocator counting;
    try {
      if (std::string(codec) == "auto") decode_memory(as_span(jpeg), "bomb.jpg", {}, counting.alloc);
      else decode_jpeg_with(codec, as_span(jpeg), "bomb.jpg", {}, counting.alloc);
      ADD_FAILURE() << "decoded a bomb";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Limit) << e.what();
      EXPECT_NE(std::string(e.what()).find("bomb.jpg"), std::string::npos) << e.what();
    }
    EXPECT_EQ(counting.calls.load(), 0);
  }
}

TEST(Codec, TurboJpegDecodesIntoTheCallersAllocator) {
  REQUIRE_TURBOJPEG();
  const Image src = make_test_image(129, 65, Format{PixelType::U8, 3}, 17);
  const auto jpeg = encode_jpeg_with("turbojpeg", src.view(), 95);
  CountingAllocator counting;
  const Image img = decode_memory(as_span(jpeg), "a.jpg", {}, counting.alloc);
  EXPECT_EQ(counting.calls.load(), 1);
  EXPECT_GE(img.pitch(), img.view().row_bytes());
}

#ifdef TF_HAVE_TURBOJPEG
TEST(Codec, CmykJpegDecodesToRgbLikeStb) {
  // libjpeg writes CMYK input as YCCK with an Adobe marker, as Photoshop does; both decoders turn
  // it into RGB (R = C * K / 255 on Adobe's inverted ink values).
  const int w = 77, h = 41;
  const Image ink = test::random_image(w, h, Format{PixelType::U8, 4}, 18);
  tjhandle tj = tjInitCompress();
  ASSERT_NE(tj, nullptr);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(tjCompress2(tj, reinterpret_cast<const unsigned char*>(ink.data()), w, static_cast<int>(ink.pitch()), h,
                        TJPF_CMYK, &out, &size, TJSAMP_444, 95, 0),
            0)
      << tjGetErrorStr2(tj);
  const std::vector<unsigned char> jpeg(out, out + size);
  tjFree(out);
  tjDestroy(tj);
  const Image by_turbo = decode_jpeg_with("turbojpeg", as_span(jpeg), "cmyk.jpg");
  const Image by_stb = decode_jpeg_with("stb", as_span(jpeg), "cmyk.jpg");
  EXPECT_EQ(by_turbo.format(), (Format{PixelType::U8, 3}));
  EXPECT_EQ(by_turbo.format(), by_stb.format());
  EXPECT_LE(test::compare(by_turbo.view(), by_stb.view()).max_abs, 2);
}
#endif

TEST(Codec, JpegCodecsAreSafeAcrossThreads) {
  // Each thread encodes and decodes its own image many times; TurboJPEG's handles are per thread.
  const Image src = make_test_image(160, 120, Format{PixelType::U8, 3}, 19);
  const auto expected_jpeg = encode_jpeg_with(have_turbojpeg() ? "turbojpeg" : "stb", src.view(), 90);
  const Image expected = decode_memory(as_span(expected_jpeg), "a.jpg");
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        const auto jpeg = encode_jpeg_with(have_turbojpeg() ? "turbojpeg" : "stb", src.view(), 90);
        if (jpeg != expected_jpeg || !same_pixels(decode_memory(as_span(jpeg), "a.jpg").view(), expected.view()))
          ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Codec, UnknownJpegCodecIsRefused) {
  const Image src = make_test_image(8, 8, Format{PixelType::U8, 3}, 20);
  EXPECT_THROW(encode_jpeg_with("libjpeg9", src.view(), 90), Error);
  if (!have_turbojpeg()) EXPECT_THROW(encode_jpeg_with("turbojpeg", src.view(), 90), Error);
}

}  // namespace
}  // namespace tf
