// The streaming PNG (libpng) and JPEG (libjpeg) readers and writers, called directly through
// io::png_codec() / io::jpeg_codec(), and the libexif helpers they share. Files the writers cannot
// make (palette, interlaced, low bit depth PNGs; progressive and CMYK JPEGs) are written here
// with libpng / libjpeg themselves.
#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "io/formats.hpp"
#include "io/metadata.hpp"
#include "jpeg_maker.hpp"
#include "test_support.hpp"
#include "tilefilter/image/testimage.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/util/error.hpp"

#ifdef TF_HAVE_LIBPNG
#include <png.h>
#include <zlib.h>
#endif
#ifdef TF_HAVE_LIBJPEG
#include <jpeglib.h>
#endif

namespace tf {
namespace {

using test::read_bytes;
using test::write_bytes;

void write_with(const io::FormatCodec& codec, const std::string& path, const ImageView& img, const Metadata& md = {},
                const WriteOptions& options = {}, int band = 5) {
  auto w = codec.create(path, img.width, img.height, img.format, md, options);
  for (int y = 0; y < img.height; y += band)
    w->write_rows(img.sub(Rect{0, y, img.width, std::min(band, img.height - y)}));
  w->finish();
}

Image read_with(const io::FormatCodec& codec, const std::string& path, int band = 7, ImageInfo* info = nullptr,
                const Limits& limits = {}) {
  auto r = codec.open(path, limits);
  Image img(r->info().width, r->info().height, r->info().format);
  for (int y = 0; y < img.height(); y += band)
    r->read_rows(y, img.view().sub(Rect{0, y, img.width(), std::min(band, img.height() - y)}));
  if (info) *info = r->info();
  return img;
}

// Mean |a - b| over the samples of two u8 images (JPEG's error on random pixels is large at places).
double mean_abs_difference(const ImageView& a, const ImageView& b) {
  double sum = 0;
  const std::size_t n = a.row_bytes();
  for (int y = 0; y < a.height; ++y)
    for (std::size_t i = 0; i < n; ++i)
      sum += std::abs(int(a.row_as<std::uint8_t>(y)[i]) - int(b.row_as<std::uint8_t>(y)[i]));
  return sum / (double(n) * a.height);
}

// The error reading `path` (whole, in bands) throws; its message must name the file.
Error read_error(const io::FormatCodec& codec, const std::string& path, const Limits& limits = {}) {
  try {
    read_with(codec, path, 16, nullptr, limits);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << "message must name the file: " << e.what();
    return e;
  }
  ADD_FAILURE() << path << " was read";
  return Error(ErrorKind::Internal, "read");
}

// An ICC profile libpng accepts (header checked: size, 'acsp', colour space, D50), tag table
// empty, then random bytes.
std::vector<unsigned char> test_icc(const char* space = "RGB ") {
  std::vector<unsigned char> p(196);
  const Image noise = test::random_image(64, 1, Format{PixelType::U8, 1}, 7);
  std::memcpy(p.data() + 132, noise.data(), 64);
  auto be32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) p[at + i] = static_cast<unsigned char>(v >> (24 - 8 * i));
  };
  be32(0, static_cast<std::uint32_t>(p.size()));
  be32(8, 0x02100000);
  std::memcpy(p.data() + 12, "mntr", 4);
  std::memcpy(p.data() + 16, space, 4);
  std::memcpy(p.data() + 20, "XYZ ", 4);
  std::memcpy(p.data() + 36, "acsp", 4);
  be32(68, 0x0000F6D6);
  be32(72, 0x00010000);
  be32(76, 0x0000D32D);
  be32(128, 0);
  return p;
}

const std::string kXmp =
    "<?xpacket begin=\"\xEF\xBB\xBF\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?><x:xmpmeta xmlns:x=\"adobe:ns:meta/\">"
    "<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\"><rdf:Description rdf:about=\"\" "
    "xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><dc:creator>tilefilter test</dc:creator></rdf:Description>"
    "</rdf:RDF></x:xmpmeta><?xpacket end=\"w\"?>";

Metadata test_metadata() {
  Metadata md;
  io::Ifd0Text text;
  text.artist = "A. Artist";
  text.make = "TileFilter";
  md.exif = io::exif_from_ifd0_text(text, 6);
  md.orientation = 6;
  md.icc = test_icc();
  md.xmp = kXmp;
  return md;
}

void expect_test_metadata(const Metadata& md, const std::string& where) {
  SCOPED_TRACE(where);
#ifdef TF_HAVE_LIBEXIF
  EXPECT_EQ(md.orientation, 6);
  EXPECT_EQ(io::exif_orientation(md.exif), 6);
  EXPECT_EQ(io::exif_ifd0_text(md.exif).artist, "A. Artist");
  EXPECT_EQ(io::exif_ifd0_text(md.exif).make, "TileFilter");
#endif
  EXPECT_EQ(md.icc, test_icc());
  EXPECT_EQ(md.xmp, kXmp);
}

// ---------------------------------------------------------------------------------------------
// EXIF helpers

#ifdef TF_HAVE_LIBEXIF
TEST(IoExif, OrientationSetAddedAndRead) {
  EXPECT_EQ(io::exif_orientation({}), 1);
  const auto made = io::exif_with_orientation({}, 8);
  ASSERT_FALSE(made.empty());
  EXPECT_TRUE(made[0] == 'I' || made[0] == 'M');  // TIFF-structured, no "Exif" prefix
  EXPECT_EQ(io::exif_orientation(made), 8);
  io::Ifd0Text text;
  text.artist = "Someone";
  text.copyright = "(c) 2024";
  text.date_time = "2024:01:02 03:04:05";
  const auto block = io::exif_from_ifd0_text(text, 3);
  EXPECT_EQ(io::exif_orientation(block), 3);
  const auto changed = io::exif_with_orientation(block, 5);
  EXPECT_EQ(io::exif_orientation(changed), 5);
  const auto back = io::exif_ifd0_text(changed);
  EXPECT_EQ(back.artist, "Someone");
  EXPECT_EQ(back.copyright, "(c) 2024");
  EXPECT_EQ(back.date_time, "2024:01:02 03:04:05");
  EXPECT_TRUE(back.model.empty());
  EXPECT_TRUE(io::exif_from_ifd0_text({}, 1).empty());
}

TEST(IoExif, GarbageIsKeptUnchanged) {
  const std::vector<unsigned char> garbage = {'n', 'o', 't', ' ', 'e', 'x', 'i', 'f', 1, 2, 3};
  EXPECT_EQ(io::exif_orientation(garbage), 1);
  EXPECT_EQ(io::exif_with_orientation(garbage, 6), garbage);
  EXPECT_TRUE(io::exif_ifd0_text(garbage).empty());
  std::vector<unsigned char> cut = io::exif_from_ifd0_text(io::Ifd0Text{.artist = "x"}, 6);
  cut.resize(10);  // a header, then nothing
  EXPECT_EQ(io::exif_orientation(cut), 1);
}
#endif

// ---------------------------------------------------------------------------------------------
// PNG

#ifdef TF_HAVE_LIBPNG
TEST(IoPng, RoundTripsBitwiseInBands) {
  test::TempDir dir;
  for (PixelType type : {PixelType::U8, PixelType::U16})
    for (int channels : {1, 3, 4}) {
      const Format f{type, channels};
      SCOPED_TRACE(to_string(f));
      const Image src = test::random_image(37, 23, f, test::test_seed(40 + channels));
      const auto path = dir / fmt::format("rt{}{}.png", to_string(type), channels);
      write_with(io::png_codec(), path, src.view());
      ImageInfo info;
      const Image back = read_with(io::png_codec(), path, 7, &info);
      EXPECT_EQ(info.format, f);
      EXPECT_EQ(info.stored_channels, channels);
      EXPECT_EQ(info.codec, "libpng");
      EXPECT_EQ(info.access, RowAccess::Sequential);
      EXPECT_TRUE(same_pixels(back.view(), src.view()));
      EXPECT_TRUE(info.metadata.empty());
    }
}

TEST(IoPng, GrayAlphaStaysGrayAlpha) {
  test::TempDir dir;
  for (PixelType type : {PixelType::U8, PixelType::U16}) {
    const Format f{type, 4};
    Image src = test::random_image(31, 17, f, test::test_seed(50));
    const std::size_t s = bytes_per_sample(type);
    for (int y = 0; y < src.height(); ++y)  // R = G = B, alpha random
      for (int x = 0; x < src.width(); ++x) {
        std::byte* p = src.view().row(y) + 4 * s * x;
        std::memcpy(p + s, p, s);
        std::memcpy(p + 2 * s, p, s);
      }
    const auto path = dir / fmt::format("ga{}.png", to_string(type));
    WriteOptions options;
    options.gray_alpha = true;
    write_with(io::png_codec(), path, src.view(), {}, options);
    png_image image{};
    image.version = PNG_IMAGE_VERSION;
    ASSERT_TRUE(png_image_begin_read_from_file(&image, path.c_str()));
    EXPECT_EQ(image.format & (PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA | PNG_FORMAT_FLAG_COLORMAP),
              static_cast<png_uint_32>(PNG_FORMAT_FLAG_ALPHA));  // gray + alpha in the file
    png_image_free(&image);
    ImageInfo info;
    const Image back = read_with(io::png_codec(), path, 7, &info);
    EXPECT_EQ(info.format, f);
    EXPECT_EQ(info.stored_channels, 2);
    EXPECT_TRUE(same_pixels(back.view(), src.view()));
  }
}

// A PNG written with libpng itself; rows in file order (16-bit big endian, packed low depths).
struct RawPng {
  int width = 0, height = 0, depth = 8, color = PNG_COLOR_TYPE_RGB;
  bool interlaced = false;
  std::vector<std::vector<unsigned char>> rows;
  std::vector<png_color> palette;
  std::vector<unsigned char> trans;  // palette alpha
  bool trans_color = false;
  png_color_16 trans_value{};
};

bool write_raw_png(const std::string& path, RawPng& p) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  std::vector<png_bytep> rows;
  for (auto& r : p.rows) rows.push_back(r.data());
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    return false;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, p.width, p.height, p.depth, p.color, p.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (!p.palette.empty()) png_set_PLTE(png, info, p.palette.data(), static_cast<int>(p.palette.size()));
  if (!p.trans.empty()) png_set_tRNS(png, info, p.trans.data(), static_cast<int>(p.trans.size()), nullptr);
  if (p.trans_color) png_set_tRNS(png, info, nullptr, 0, &p.trans_value);
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
  return true;
}

TEST(IoPng, PaletteBecomesRgbOrRgba) {
  test::TempDir dir;
  const Image idx = test::random_image(29, 13, Format{PixelType::U8, 1}, test::test_seed(60));
  for (bool alpha : {false, true}) {
    RawPng p;
    p.width = idx.width();
    p.height = idx.height();
    p.color = PNG_COLOR_TYPE_PALETTE;
    for (int i = 0; i < 16; ++i)
      p.palette.push_back(png_color{png_byte(i * 16), png_byte(255 - i * 7), png_byte(i * 3)});
    if (alpha)
      for (int i = 0; i < 16; ++i) p.trans.push_back(static_cast<unsigned char>(i * 17));
    for (int y = 0; y < p.height; ++y) {
      p.rows.emplace_back();
      for (int x = 0; x < p.width; ++x) p.rows.back().push_back(idx.view().row_as<std::uint8_t>(y)[x] & 15);
    }
    const auto path = dir / fmt::format("pal{}.png", alpha);
    ASSERT_TRUE(write_raw_png(path, p));
    ImageInfo info;
    const Image back = read_with(io::png_codec(), path, 7, &info);
    const int c = alpha ? 4 : 3;
    EXPECT_EQ(info.format, (Format{PixelType::U8, c}));
    for (int y = 0; y < p.height; ++y)
      for (int x = 0; x < p.width; ++x) {
        const int i = p.rows[y][x];
        const auto* px = back.view().row_as<std::uint8_t>(y) + c * x;
        ASSERT_EQ(px[0], p.palette[i].red);
        ASSERT_EQ(px[1], p.palette[i].green);
        ASSERT_EQ(px[2], p.palette[i].blue);
        if (alpha) ASSERT_EQ(px[3], i * 17);
      }
  }
}

TEST(IoPng, LowBitDepthGrayAndTrnsGray) {
  test::TempDir dir;
  const Image src = test::random_image(21, 11, Format{PixelType::U8, 1}, test::test_seed(61));
  // 2-bit gray, packed four pixels a byte, expanded to 8 bits (v * 85).
  RawPng p;
  p.width = src.width();
  p.height = src.height();
  p.depth = 2;
  p.color = PNG_COLOR_TYPE_GRAY;
  for (int y = 0; y < p.height; ++y) {
    p.rows.emplace_back((p.width + 3) / 4, 0);
    for (int x = 0; x < p.width; ++x)
      p.rows.back()[x / 4] |=
          static_cast<unsigned char>((src.view().row_as<std::uint8_t>(y)[x] & 3) << (6 - 2 * (x % 4)));
  }
  ASSERT_TRUE(write_raw_png(dir / "g2.png", p));
  ImageInfo info;
  Image back = read_with(io::png_codec(), dir / "g2.png", 7, &info);
  EXPECT_EQ(info.format, (Format{PixelType::U8, 1}));
  for (int y = 0; y < p.height; ++y)
    for (int x = 0; x < p.width; ++x)
      ASSERT_EQ(back.view().row_as<std::uint8_t>(y)[x], (src.view().row_as<std::uint8_t>(y)[x] & 3) * 85);

  // 8-bit gray with a transparent gray value: RGBA, alpha 0 exactly there, stored as gray+alpha.
  RawPng t;
  t.width = src.width();
  t.height = src.height();
  t.color = PNG_COLOR_TYPE_GRAY;
  for (int y = 0; y < t.height; ++y) {
    const auto* r = src.view().row_as<std::uint8_t>(y);
    t.rows.emplace_back(r, r + t.width);
  }
  t.trans_color = true;
  t.trans_value.gray = t.rows[3][4];
  ASSERT_TRUE(write_raw_png(dir / "gt.png", t));
  back = read_with(io::png_codec(), dir / "gt.png", 7, &info);
  EXPECT_EQ(info.format, (Format{PixelType::U8, 4}));
  EXPECT_EQ(info.stored_channels, 2);
  for (int y = 0; y < t.height; ++y)
    for (int x = 0; x < t.width; ++x) {
      const auto* px = back.view().row_as<std::uint8_t>(y) + 4 * x;
      const int g = t.rows[y][x];
      ASSERT_EQ(px[0], g);
      ASSERT_EQ(px[2], g);
      ASSERT_EQ(px[3], g == t.trans_value.gray ? 0 : 255);
    }
}

TEST(IoPng, InterlacedIsReadWhole) {
  test::TempDir dir;
  for (int depth : {8, 16}) {
    const Format f{depth == 8 ? PixelType::U8 : PixelType::U16, 3};
    const Image src = test::random_image(45, 33, f, test::test_seed(62 + depth));
    RawPng p;
    p.width = src.width();
    p.height = src.height();
    p.depth = depth;
    p.interlaced = true;
    for (int y = 0; y < p.height; ++y) {
      const auto* r = reinterpret_cast<const unsigned char*>(src.view().row(y));
      p.rows.emplace_back(r, r + src.view().row_bytes());
      if (depth == 16)  // host order to PNG's big endian
        for (std::size_t i = 0; i + 1 < p.rows.back().size(); i += 2) std::swap(p.rows.back()[i], p.rows.back()[i + 1]);
    }
    const auto path = dir / fmt::format("adam7_{}.png", depth);
    ASSERT_TRUE(write_raw_png(path, p));
    ImageInfo info;
    const Image back = read_with(io::png_codec(), path, 7, &info);
    EXPECT_EQ(info.access, RowAccess::Whole);
    EXPECT_EQ(info.format, f);
    EXPECT_TRUE(same_pixels(back.view(), src.view())) << depth;
    // Whole files hand out any band, in any order.
    auto r = io::png_codec().open(path, {});
    Image band(src.width(), 4, f);
    r->read_rows(20, band.view());
    EXPECT_TRUE(same_pixels(band.view(), src.view().sub(Rect{0, 20, src.width(), 4})));
  }
}

TEST(IoPng, EmptyIdatChunkAndIccForTheWrongColourSpace) {
  test::TempDir dir;
  const Image src = test::random_image(19, 9, Format{PixelType::U8, 1}, test::test_seed(64));
  // An ICC profile for RGB on a gray image: libpng leaves it out (a warning), the image is written.
  Metadata md;
  md.icc = test_icc("RGB ");
  write_with(io::png_codec(), dir / "g.png", src.view(), md);
  ImageInfo info;
  EXPECT_TRUE(same_pixels(read_with(io::png_codec(), dir / "g.png", 7, &info).view(), src.view()));
  EXPECT_TRUE(info.metadata.icc.empty());
  md.icc = test_icc("GRAY");
  write_with(io::png_codec(), dir / "g.png", src.view(), md);
  read_with(io::png_codec(), dir / "g.png", 7, &info);
  EXPECT_EQ(info.metadata.icc, md.icc);
  // A zero-length IDAT chunk before the data (legal; stb needed a workaround for it).
  auto bytes = read_bytes(dir / "g.png");
  const unsigned char idat[] = {'I', 'D', 'A', 'T'};
  const auto at = std::search(bytes.begin(), bytes.end(), idat, idat + 4) - bytes.begin() - 4;
  std::vector<unsigned char> empty = {0, 0, 0, 0, 'I', 'D', 'A', 'T'};
  const uLong crc = crc32(crc32(0, nullptr, 0), empty.data() + 4, 4);
  for (int i = 0; i < 4; ++i) empty.push_back(static_cast<unsigned char>(crc >> (24 - 8 * i)));
  bytes.insert(bytes.begin() + at, empty.begin(), empty.end());
  write_bytes(dir / "e.png", bytes);
  EXPECT_TRUE(same_pixels(read_with(io::png_codec(), dir / "e.png").view(), src.view()));
}

TEST(IoPng, WriterRefusesFloatAndKeepsNoPartialFile) {
  test::TempDir dir;
  std::string why;
  EXPECT_FALSE(io::png_codec().can_write(Format{PixelType::F32, 3}, &why));
  EXPECT_NE(why.find("PNG holds 8- and 16-bit pixels"), std::string::npos) << why;
  EXPECT_THROW(io::png_codec().create(dir / "f.png", 8, 8, Format{PixelType::F32, 3}, {}, {}), Error);
  const Image src = test::random_image(16, 16, Format{PixelType::U8, 3}, 63);
  {
    auto w = io::png_codec().create(dir / "part.png", 16, 16, src.format(), {}, {});
    w->write_rows(src.view().sub(Rect{0, 0, 16, 8}));
    EXPECT_THROW(w->finish(), Error);  // 8 of 16 rows
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path)) << "no file, temporary or final, after an unfinished write";
}

// A PNG decoded by libpng's own row reader, rows as the file stores them (16-bit big endian, gray+alpha
// as two channels), to the end of the file (IEND, so the zlib stream's Adler-32 and every CRC are
// checked); empty when libpng refuses it.
struct DecodedPng {
  int width = 0, height = 0, channels = 0, depth = 0, interlace = -1;
  std::vector<unsigned char> bytes;
};

DecodedPng libpng_decode(const std::string& path) {
  DecodedPng d;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return d;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  std::vector<png_bytep> rows;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    std::fclose(f);
    return DecodedPng{};
  }
  png_init_io(png, f);
  png_read_info(png, info);
  d.width = static_cast<int>(png_get_image_width(png, info));
  d.height = static_cast<int>(png_get_image_height(png, info));
  d.channels = png_get_channels(png, info);
  d.depth = png_get_bit_depth(png, info);
  d.interlace = png_get_interlace_type(png, info);
  const std::size_t row_bytes = png_get_rowbytes(png, info);
  d.bytes.resize(row_bytes * d.height);
  for (int y = 0; y < d.height; ++y) rows.push_back(d.bytes.data() + row_bytes * y);
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  std::fclose(f);
  return d;
}

// The rows of img as a PNG file stores them: 16-bit big endian; RGBA as gray+alpha when asked.
std::vector<unsigned char> file_order(const ImageView& img, bool gray_alpha) {
  const std::size_t s = bytes_per_sample(img.format.type);
  std::vector<unsigned char> out;
  for (int y = 0; y < img.height; ++y) {
    const auto* r = reinterpret_cast<const unsigned char*>(img.row(y));
    for (int x = 0; x < img.width; ++x)
      for (int c = 0; c < img.format.channels; ++c) {
        if (gray_alpha && (c == 1 || c == 2)) continue;
        const unsigned char* v = r + (static_cast<std::size_t>(x) * img.format.channels + c) * s;
        if (s == 2) out.insert(out.end(), {v[1], v[0]});
        else out.push_back(v[0]);
      }
  }
  return out;
}

// The writer deflates chunks of rows (about 256 KiB filtered) on all cores; at the sizes below
// the tall images are cut into several chunks (2 to 13), the small ones fit in one.
TEST(IoPng, ChunkedDeflateRoundTripsAndLibpngDecodesIt) {
  test::TempDir dir;
  for (PixelType type : {PixelType::U8, PixelType::U16})
    for (int stored : {1, 2, 3, 4})
      for (auto [w, h] : {std::pair{1, 1}, {7, 3}, {61, 37}, {211, 2003}}) {
        const Format f{type, stored == 2 ? 4 : stored};
        SCOPED_TRACE(fmt::format("{} stored as {} channels, {}x{}", to_string(f), stored, w, h));
        Image src = h > 100 ? make_test_image(w, h, f, test::test_seed(70 + stored))
                            : test::random_image(w, h, f, test::test_seed(80 + stored));
        WriteOptions options;
        options.gray_alpha = stored == 2;
        if (options.gray_alpha)  // R = G = B
          for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
              std::byte* p = src.view().row(y) + 4 * bytes_per_sample(type) * x;
              std::memcpy(p + bytes_per_sample(type), p, bytes_per_sample(type));
              std::memcpy(p + 2 * bytes_per_sample(type), p, bytes_per_sample(type));
            }
        const auto path = dir / "c.png";
        Metadata md;  // on the tall images; an ICC profile of the image's colour space (libpng checks)
        if (h > 100) md = test_metadata(), md.icc = test_icc(stored <= 2 ? "GRAY" : "RGB ");
        write_with(io::png_codec(), path, src.view(), md, options, 97);
        const DecodedPng d = libpng_decode(path);
        ASSERT_EQ(d.width, w);
        ASSERT_EQ(d.height, h);
        EXPECT_EQ(d.channels, stored);
        EXPECT_EQ(d.depth, type == PixelType::U8 ? 8 : 16);
        EXPECT_EQ(d.interlace, PNG_INTERLACE_NONE);
        EXPECT_TRUE(d.bytes == file_order(src.view(), options.gray_alpha));
        ImageInfo info;
        EXPECT_TRUE(same_pixels(read_with(io::png_codec(), path, 64, &info).view(), src.view()));
        if (h > 100) {
          EXPECT_EQ(info.metadata.icc, md.icc);
          EXPECT_EQ(info.metadata.xmp, kXmp);
          EXPECT_EQ(info.metadata.exif, md.exif);
        }
      }
}

TEST(IoPng, SameBytesWhateverTheThreadsAndBands) {
  test::TempDir dir;
  const Image src = make_test_image(301, 1500, Format{PixelType::U8, 3}, test::test_seed(90));
  std::vector<unsigned char> first;
  for (auto [threads, band] : {std::pair{1, 1500}, {4, 1}, {4, 300}, {3, 64}, {0, 7}}) {
    WriteOptions options;
    options.threads = threads;
    const auto path = dir / fmt::format("t{}_{}.png", threads, band);
    write_with(io::png_codec(), path, src.view(), test_metadata(), options, band);
    const auto bytes = read_bytes(path);
    if (first.empty()) first = bytes;
    else EXPECT_TRUE(bytes == first) << threads << " threads, bands of " << band;
  }
}

// --compression 0-9: 0 stores (the file holds every byte), 9 compresses at least as well as 1, and
// the default compresses within 1% of libpng's single stream (one deflate over all the rows).
TEST(IoPng, CompressionLevelsAndSizeNextToLibpng) {
  test::TempDir dir;
  const Image src = make_test_image(601, 901, Format{PixelType::U8, 3}, test::test_seed(91));
  std::uintmax_t sizes[10] = {};
  for (int level : {0, 1, 9, -1}) {
    WriteOptions options;
    options.level = level;
    const auto path = dir / fmt::format("l{}.png", level);
    write_with(io::png_codec(), path, src.view(), {}, options, 128);
    EXPECT_TRUE(libpng_decode(path).bytes == file_order(src.view(), false)) << "level " << level;
    if (level >= 0) sizes[level] = std::filesystem::file_size(path);
  }
  EXPECT_GT(sizes[0], src.view().row_bytes() * src.height());
  EXPECT_LE(sizes[9], sizes[1]);
  RawPng p;
  p.width = src.width();
  p.height = src.height();
  for (int y = 0; y < p.height; ++y) {
    const auto* r = reinterpret_cast<const unsigned char*>(src.view().row(y));
    p.rows.emplace_back(r, r + src.view().row_bytes());
  }
  ASSERT_TRUE(write_raw_png(dir / "libpng.png", p));
  const double ours = static_cast<double>(std::filesystem::file_size(dir / "l-1.png"));
  const double theirs = static_cast<double>(std::filesystem::file_size(dir / "libpng.png"));
  EXPECT_LT(ours, theirs * 1.01) << ours << " bytes, libpng " << theirs;
}
#endif

// ---------------------------------------------------------------------------------------------
// JPEG

#ifdef TF_HAVE_LIBJPEG
TEST(IoJpeg, DecodeEqualsTurboJpegAndBandsEqualWhole) {
  test::TempDir dir;
  for (int channels : {1, 3})
    for (int quality : {75, 95}) {
      SCOPED_TRACE(fmt::format("{} channels, quality {}", channels, quality));
      const Image src = test::random_image(61, 35, Format{PixelType::U8, channels}, test::test_seed(70 + quality));
      const auto path = dir / fmt::format("q{}_{}.jpg", quality, channels);
      WriteOptions options;
      options.quality = quality;
      write_with(io::jpeg_codec(), path, src.view(), {}, options);
      ImageInfo info;
      const Image banded = read_with(io::jpeg_codec(), path, 7, &info);
      EXPECT_EQ(info.format, src.format());
      EXPECT_EQ(info.access, RowAccess::Sequential);
      EXPECT_EQ(info.codec, "libjpeg");
      const Image whole = read_with(io::jpeg_codec(), path, src.height());
      EXPECT_TRUE(same_pixels(banded.view(), whole.view()));
      EXPECT_LT(mean_abs_difference(whole.view(), src.view()), 20);
#ifdef TF_HAVE_TURBOJPEG
      const auto bytes = read_bytes(path);
      const Image turbo = decode_jpeg_with("turbojpeg", bytes, path);
      EXPECT_TRUE(same_pixels(turbo.view(), whole.view()));
      // The writer makes what tjCompress2 makes: same tables, DCT, subsampling.
      EXPECT_EQ(bytes, encode_jpeg_with("turbojpeg", src.view(), quality));
#endif
    }
}

TEST(IoJpeg, RgbaIsWrittenAsRgb) {
  test::TempDir dir;
  const Image rgba = test::random_image(40, 24, Format{PixelType::U8, 4}, test::test_seed(72));
  Image rgb(40, 24, Format{PixelType::U8, 3});
  for (int y = 0; y < 24; ++y)
    for (int x = 0; x < 40; ++x) std::memcpy(rgb.view().row(y) + 3 * x, rgba.view().row(y) + 4 * x, 3);
  write_with(io::jpeg_codec(), dir / "a.jpg", rgba.view());
  write_with(io::jpeg_codec(), dir / "b.jpg", rgb.view());
  EXPECT_EQ(read_bytes(dir / "a.jpg"), read_bytes(dir / "b.jpg"));
  ImageInfo info;
  read_with(io::jpeg_codec(), dir / "a.jpg", 7, &info);
  EXPECT_EQ(info.format, (Format{PixelType::U8, 3}));
  std::string why;
  EXPECT_FALSE(io::jpeg_codec().can_write(Format{PixelType::U16, 3}, &why));
  EXPECT_NE(why.find("JPEG holds 8-bit pixels"), std::string::npos) << why;
}

// A JPEG written with libjpeg itself: progressive (jpeg_simple_progression) or CMYK (YCCK + Adobe).
std::vector<unsigned char> raw_jpeg(const ImageView& img, bool progressive, bool cmyk) {
  test::JpegShape shape;
  shape.progressive = progressive;
  shape.cmyk = cmyk;
  return test::libjpeg_encode(img, shape);
}

TEST(IoJpeg, ProgressiveIsReadable) {
  test::TempDir dir;
  for (int channels : {1, 3}) {
    const Image src = test::random_image(53, 47, Format{PixelType::U8, channels}, test::test_seed(73 + channels));
    const auto path = dir / fmt::format("prog{}.jpg", channels);
    write_bytes(path, raw_jpeg(src.view(), true, false));
    ImageInfo info;
    const Image banded = read_with(io::jpeg_codec(), path, 7, &info);
    EXPECT_EQ(info.format, src.format());
    const Image whole = read_with(io::jpeg_codec(), path, src.height());
    EXPECT_TRUE(same_pixels(banded.view(), whole.view()));
    EXPECT_LT(mean_abs_difference(whole.view(), src.view()), 20);
#ifdef TF_HAVE_TURBOJPEG
    EXPECT_TRUE(same_pixels(decode_jpeg_with("turbojpeg", read_bytes(path), path).view(), whole.view()));
#endif
  }
}

TEST(IoJpeg, CmykBecomesRgbAsBefore) {
  test::TempDir dir;
  const Image ink = test::random_image(37, 29, Format{PixelType::U8, 4}, test::test_seed(75));
  const auto path = dir / "cmyk.jpg";
  write_bytes(path, raw_jpeg(ink.view(), false, true));
  ImageInfo info;
  const Image rgb = read_with(io::jpeg_codec(), path, 7, &info);
  EXPECT_EQ(info.format, (Format{PixelType::U8, 3}));
  EXPECT_FALSE(info.note.empty());
#ifdef TF_HAVE_TURBOJPEG
  EXPECT_TRUE(same_pixels(decode_jpeg_with("turbojpeg", read_bytes(path), path).view(), rgb.view()));
#endif
  EXPECT_LE(test::compare(decode_jpeg_with("stb", read_bytes(path), path).view(), rgb.view()).max_abs, 2);
}
#endif

// ---------------------------------------------------------------------------------------------
// Metadata through both formats

#if defined(TF_HAVE_LIBPNG) && defined(TF_HAVE_LIBJPEG)
TEST(IoMetadata, ExifIccXmpSurviveEveryPair) {
  test::TempDir dir;
  const Image src = test::random_image(24, 16, Format{PixelType::U8, 3}, test::test_seed(80));
  const Metadata md = test_metadata();
  const io::FormatCodec* codecs[] = {&io::png_codec(), &io::jpeg_codec()};
  for (const auto* first : codecs)
    for (const auto* second : codecs) {
      const std::string a = dir / fmt::format("a_{}.{}", first->name, first == codecs[0] ? "png" : "jpg");
      const std::string b =
          dir / fmt::format("b_{}_{}.{}", first->name, second->name, second == codecs[0] ? "png" : "jpg");
      write_with(*first, a, src.view(), md);
      ImageInfo info;
      const Image pixels = read_with(*first, a, 7, &info);
      expect_test_metadata(info.metadata, a);
      write_with(*second, b, pixels.view(), info.metadata);
      ImageInfo again;
      read_with(*second, b, 7, &again);
      expect_test_metadata(again.metadata, b);
      // --strip: nothing of it in the file.
      WriteOptions strip;
      strip.strip = true;
      write_with(*second, b, pixels.view(), info.metadata, strip);
      read_with(*second, b, 7, &again);
      EXPECT_TRUE(again.metadata.empty()) << b;
      const auto bytes = read_bytes(b);
      EXPECT_EQ(std::search(bytes.begin(), bytes.end(), kXmp.begin(), kXmp.end()), bytes.end()) << b;
    }
}

#ifdef TF_HAVE_LIBEXIF
TEST(IoMetadata, OrientationWithoutExifIsWrittenAndChangedOnes) {
  test::TempDir dir;
  const Image src = test::random_image(16, 8, Format{PixelType::U8, 3}, test::test_seed(81));
  for (const auto* codec : {&io::png_codec(), &io::jpeg_codec()}) {
    const std::string path = dir / (codec == &io::png_codec() ? "o.png" : "o.jpg");
    Metadata md;
    md.orientation = 3;  // no EXIF block: one is made for the tag
    write_with(*codec, path, src.view(), md);
    ImageInfo info;
    read_with(*codec, path, 7, &info);
    EXPECT_EQ(info.metadata.orientation, 3) << path;
    // --autorotate writes 1 over an EXIF block that says 6; the other tags stay.
    Metadata rotated = test_metadata();
    rotated.orientation = 1;
    write_with(*codec, path, src.view(), rotated);
    read_with(*codec, path, 7, &info);
    EXPECT_EQ(info.metadata.orientation, 1) << path;
    EXPECT_EQ(io::exif_orientation(info.metadata.exif), 1) << path;
    EXPECT_EQ(io::exif_ifd0_text(info.metadata.exif).artist, "A. Artist") << path;
  }
}
#endif
#endif

#ifdef TF_HAVE_LIBJPEG
// The GPU codec's two CPU helpers: the header probe that routes a JPEG, and the metadata that is
// written into the GPU encoder's stream.
TEST(IoJpeg, StreamInfoReadsTheHeaderOnly) {
  const Image rgb = make_test_image(203, 97, Format{PixelType::U8, 3}, test::test_seed(81));
  const Image gray = make_test_image(61, 40, Format{PixelType::U8, 1}, test::test_seed(82));
  test::JpegShape progressive;
  progressive.progressive = true;
  struct Case {
    std::vector<unsigned char> bytes;
    int w, h, components;
    bool progressive, gray;
  } cases[] = {{test::libjpeg_encode(rgb.view()), 203, 97, 3, false, false},
               {test::libjpeg_encode(rgb.view(), progressive), 203, 97, 3, true, false},
               {test::libjpeg_encode(gray.view()), 61, 40, 1, false, true}};
  for (const auto& c : cases) {
    const JpegStreamInfo info = jpeg_stream_info(c.bytes, "case.jpg");
    EXPECT_EQ(info.width, c.w);
    EXPECT_EQ(info.height, c.h);
    EXPECT_EQ(info.components, c.components);
    EXPECT_EQ(info.progressive, c.progressive);
    EXPECT_EQ(info.gray, c.gray);
    EXPECT_FALSE(info.cmyk);
    EXPECT_EQ(info.precision, 8);
  }
  const std::vector<unsigned char> garbage(100, 0x42);
  try {
    (void)jpeg_stream_info(garbage, "garbage.jpg");
    ADD_FAILURE() << "garbage was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Decode);
    EXPECT_NE(std::string(e.what()).find("garbage.jpg"), std::string::npos) << e.what();
  }
}

#ifdef TF_HAVE_LIBEXIF
TEST(IoJpeg, MetadataWrittenIntoAnotherEncodersStream) {
  test::TempDir dir;
  const Image src = make_test_image(120, 80, Format{PixelType::U8, 3}, test::test_seed(83));
  const std::vector<unsigned char> bare = test::libjpeg_encode(src.view());  // JFIF APP0, no metadata
  Metadata md = test_metadata();
  // An ICC profile past one marker's 65519 bytes goes in numbered chunks.
  Metadata large = md;
  large.icc.resize(150000);
  for (std::size_t i = 196; i < large.icc.size(); ++i) large.icc[i] = static_cast<unsigned char>(i * 7);
  const std::uint32_t size = static_cast<std::uint32_t>(large.icc.size());
  for (int k = 0; k < 4; ++k) large.icc[k] = static_cast<unsigned char>(size >> (24 - 8 * k));
  for (const Metadata* m : {&md, &large}) {
    const auto bytes = jpeg_with_metadata(bare, *m);
    const std::string path = dir / "spliced.jpg";
    write_bytes(path, bytes);
    ImageInfo info;
    const Image pixels = read_with(io::jpeg_codec(), path, 7, &info);
    EXPECT_EQ(info.metadata.orientation, 6);
    EXPECT_EQ(io::exif_ifd0_text(info.metadata.exif).artist, "A. Artist");
    EXPECT_EQ(info.metadata.xmp, kXmp);
    EXPECT_EQ(info.metadata.icc, m->icc);
    // The pixels are the stream's own.
    write_bytes(dir / "bare.jpg", bare);
    EXPECT_EQ(test::compare(pixels.view(), read_with(io::jpeg_codec(), dir / "bare.jpg").view()).max_abs, 0.0);
    EXPECT_EQ(jpeg_stream_info(bytes, path).metadata.xmp, kXmp);
  }
  // Nothing to add: the stream is unchanged; not a JPEG: refused.
  EXPECT_EQ(jpeg_with_metadata(bare, Metadata{}), bare);
  const std::vector<unsigned char> png_head = {0x89, 'P', 'N', 'G', 0, 0};
  EXPECT_THROW((void)jpeg_with_metadata(png_head, md), Error);
}
#endif
#endif

// ---------------------------------------------------------------------------------------------
// Bad input

#if defined(TF_HAVE_LIBPNG) && defined(TF_HAVE_LIBJPEG)
TEST(IoBadInput, EmptyGarbageAndTruncatedFilesNameTheFile) {
  test::TempDir dir;
  write_bytes(dir / "empty.png", {});
  write_bytes(dir / "empty.jpg", {});
  EXPECT_EQ(read_error(io::png_codec(), dir / "empty.png").kind(), ErrorKind::Decode);
  EXPECT_EQ(read_error(io::jpeg_codec(), dir / "empty.jpg").kind(), ErrorKind::Decode);
  const Image noise = test::random_image(64, 16, Format{PixelType::U8, 1}, test::test_seed(90));
  const auto* noise_bytes = reinterpret_cast<const unsigned char*>(noise.data());
  std::vector<unsigned char> garbage(noise_bytes, noise_bytes + 1024);
  write_bytes(dir / "garbage.png", garbage);
  write_bytes(dir / "garbage.jpg", garbage);
  EXPECT_EQ(read_error(io::png_codec(), dir / "garbage.png").kind(), ErrorKind::Decode);
  EXPECT_EQ(read_error(io::jpeg_codec(), dir / "garbage.jpg").kind(), ErrorKind::Decode);
  // A valid signature followed by garbage.
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  std::copy(sig, sig + 8, garbage.begin());
  write_bytes(dir / "garbage2.png", garbage);
  garbage[0] = 0xFF, garbage[1] = 0xD8, garbage[2] = 0xFF;
  write_bytes(dir / "garbage2.jpg", garbage);
  EXPECT_EQ(read_error(io::png_codec(), dir / "garbage2.png").kind(), ErrorKind::Decode);
  EXPECT_EQ(read_error(io::jpeg_codec(), dir / "garbage2.jpg").kind(), ErrorKind::Decode);

  const Image src = test::random_image(96, 64, Format{PixelType::U8, 3}, test::test_seed(91));
  for (const char* name : {"cut.png", "cut.jpg", "cut_prog.jpg", "cut_end.jpg"}) {
    const std::string path = dir / name;
    const bool png = std::string(name).ends_with(".png");
    if (png) write_with(io::png_codec(), path, src.view());
    else if (std::string(name) == "cut_prog.jpg") write_bytes(path, raw_jpeg(src.view(), true, false));
    else write_with(io::jpeg_codec(), path, src.view());
    auto bytes = read_bytes(path);
    bytes.resize(std::string(name) == "cut_end.jpg" ? bytes.size() - 2 : bytes.size() / 2);  // no EOI / half
    write_bytes(path, bytes);
    const Error e = read_error(png ? io::png_codec() : io::jpeg_codec(), path);
    EXPECT_EQ(e.kind(), ErrorKind::Decode) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

// A PNG of only a signature and an IHDR chunk claiming width x height, interlaced or not.
std::vector<unsigned char> png_header_only(std::uint32_t w, std::uint32_t h, bool interlaced) {
  std::vector<unsigned char> b = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  for (std::uint32_t v : {w, h})
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<unsigned char>(v >> (24 - 8 * i)));
  for (unsigned char v : {8, 2, 0, 0, interlaced ? 1 : 0}) b.push_back(v);  // 8-bit RGB
  const uLong crc = crc32(crc32(0, nullptr, 0), b.data() + 12, 17);
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<unsigned char>(crc >> (24 - 8 * i)));
  return b;
}

TEST(IoBadInput, HugeHeadersAreRefusedBeforeAllocation) {
  test::TempDir dir;
  write_bytes(dir / "huge.png", png_header_only(1000000, 1000000, false));
  write_bytes(dir / "huge_adam7.png", png_header_only(1000000, 1000000, true));
  Limits tight;
  tight.max_stream_pixels = 1LL << 36;
  EXPECT_EQ(read_error(io::png_codec(), dir / "huge.png", tight).kind(), ErrorKind::Limit);
  // Interlaced files are decoded whole: the whole-image limit (a gigapixel by default) applies.
  EXPECT_EQ(read_error(io::png_codec(), dir / "huge_adam7.png").kind(), ErrorKind::Limit);
  // Within the streaming limit a header with no data opens (one row is allocated) and the first
  // band fails as truncated.
  const Error e = read_error(io::png_codec(), dir / "huge.png");
  EXPECT_EQ(e.kind(), ErrorKind::Decode) << e.what();

  // JPEG: a real file's frame header patched to 65000 x 65000.
  const Image src = test::random_image(16, 16, Format{PixelType::U8, 3}, test::test_seed(92));
  for (bool progressive : {false, true}) {
    auto bytes = raw_jpeg(src.view(), progressive, false);
    const unsigned char sof = progressive ? 0xC2 : 0xC0;
    std::size_t at = 2;
    while (at + 4 < bytes.size() && !(bytes[at] == 0xFF && bytes[at + 1] == sof))
      at += 2 + (bytes[at + 2] << 8 | bytes[at + 3]);
    ASSERT_LT(at + 9, bytes.size());
    bytes[at + 5] = bytes[at + 7] = 0xFD;  // height, width: 0xFDE8 = 65000
    bytes[at + 6] = bytes[at + 8] = 0xE8;
    const std::string path = dir / (progressive ? "huge_prog.jpg" : "huge.jpg");
    write_bytes(path, bytes);
    // Progressive files hold their coefficients whole: the whole-image limit applies.
    Limits jpeg_tight;
    jpeg_tight.max_stream_pixels = 1LL << 30;
    EXPECT_EQ(read_error(io::jpeg_codec(), path, progressive ? Limits{} : jpeg_tight).kind(), ErrorKind::Limit) << path;
  }
}

TEST(IoBadInput, RowsOutOfOrderAreRefused) {
  test::TempDir dir;
  const Image src = test::random_image(16, 16, Format{PixelType::U8, 3}, test::test_seed(93));
  write_with(io::png_codec(), dir / "a.png", src.view());
  write_with(io::jpeg_codec(), dir / "a.jpg", src.view());
  for (const auto* codec : {&io::png_codec(), &io::jpeg_codec()}) {
    auto r = codec->open(dir / (codec == &io::png_codec() ? "a.png" : "a.jpg"), {});
    Image band(16, 4, src.format());
    EXPECT_THROW(r->read_rows(4, band.view()), Error);
    r->read_rows(0, band.view());
    r->read_rows(4, band.view());
  }
}
#endif

}  // namespace
}  // namespace tf
