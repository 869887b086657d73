// Filter specs, kernel files and the presets' kernels.
#include <fstream>

#include "test_support.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/util/error.hpp"

namespace tf {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const auto path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::string& spec) {
  try {
    parse_filter_spec(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(FilterSpec, PresetsAndDefaults) {
  const Stage g = parse_filter_spec("gaussian:sigma=2");
  ASSERT_EQ(g.convs.size(), 1u);
  EXPECT_TRUE(g.convs[0].separable);
  EXPECT_EQ(g.convs[0].row.size(), 13u);  // radius ceil(3*2) = 6
  EXPECT_EQ(parse_filter_spec("gaussian:sigma=2,radius=4").convs[0].row.size(), 9u);
  EXPECT_EQ(parse_filter_spec("box:radius=3").halo(), (Halo{3, 3, 3, 3}));
  EXPECT_EQ(parse_filter_spec("box").halo(), (Halo{1, 1, 1, 1}));
  const Stage s = parse_filter_spec("sobel");
  EXPECT_EQ(s.combine, Combine::Magnitude);
  EXPECT_EQ(s.convs.size(), 2u);
  EXPECT_FALSE(parse_filter_spec("emboss").convs[0].separable);
  EXPECT_FALSE(parse_filter_spec("unsharp:sigma=1,amount=1").convs[0].separable);
  const Stage sh = parse_filter_spec("sharpen:amount=1");
  EXPECT_FLOAT_EQ(sh.convs[0].kernel.at(1, 1), 5.0f);
  EXPECT_FLOAT_EQ(sh.convs[0].kernel.at(0, 1), -1.0f);
}

TEST(FilterSpec, EveryCatalogEntryParsesWithDefaults) {
  const auto k = write_file("tf-spec-k.txt", "1 2 1\n");
  for (const auto& f : filter_catalog()) {
    const std::string spec = f.name == "custom" ? "custom:file=" + k : f.name;
    EXPECT_NO_THROW(parse_filter_spec(spec)) << spec;
  }
}

TEST(FilterSpec, ErrorsNameTheProblem) {
  EXPECT_NE(error_of("blurr").find("unknown filter 'blurr'"), std::string::npos);
  // Other tools' names point to ours: ImageMagick's -blur and -gaussian-blur, vips' gaussblur, GIMP's
  // Unsharp Mask, -edge.
  for (const auto& [theirs, ours] : std::vector<std::pair<std::string, std::string>>{{"blur", "gaussian"},
                                                                                     {"gaussian-blur", "gaussian"},
                                                                                     {"GaussBlur", "gaussian"},
                                                                                     {"unsharp_mask", "unsharp"},
                                                                                     {"edge", "sobel"},
                                                                                     {"laplace", "laplacian"}})
    EXPECT_NE(error_of(theirs).find("did you mean '" + ours + "'?"), std::string::npos)
        << theirs << ": " << error_of(theirs);
  EXPECT_NE(error_of("sharpne").find("did you mean 'sharpen'?"), std::string::npos);
  EXPECT_EQ(error_of("zzzz").find("did you mean"), std::string::npos);
  EXPECT_NE(error_of("gaussian:sigma=abc").find("not a number"), std::string::npos);
  EXPECT_NE(error_of("gaussian:sigmaa=2").find("unknown parameter 'sigmaa'"), std::string::npos);
  EXPECT_NE(error_of("gaussian:sigma=-1").find("out of range"), std::string::npos);
  EXPECT_NE(error_of("box:radius=1.5").find("whole number"), std::string::npos);
  EXPECT_NE(error_of("sobel:dir=z").find("not one of"), std::string::npos);
  EXPECT_NE(error_of("gaussian:sigma").find("key=value"), std::string::npos);
  EXPECT_NE(error_of("custom").find("'file' is required"), std::string::npos);
  EXPECT_NE(error_of("gaussian:sigma=1,sigma=2").find("twice"), std::string::npos);
  EXPECT_THROW(parse_chain({}), Error);
  EXPECT_THROW(parse_chain(std::vector<std::string>(kMaxChainLength + 1, "box")), Error);
}

TEST(KernelFile, RowsSpacesCommasComments) {
  const Kernel k = parse_kernel_text("# a comment\n1, 2 ,3 # trailing\n\n4\t5 6\n", "k");
  EXPECT_EQ(k.width, 3);
  EXPECT_EQ(k.height, 2);
  EXPECT_EQ(k.anchor_x, 1);
  EXPECT_EQ(k.anchor_y, 1);
  EXPECT_FLOAT_EQ(k.at(2, 1), 6.0f);
  const Kernel even = parse_kernel_text("1 2 3 4\n5 6 7 8\n", "k");
  EXPECT_EQ(even.anchor_x, 2);  // OpenCV's (width/2, height/2)
  EXPECT_EQ(even.anchor_y, 1);
  EXPECT_EQ(even.halo(), (Halo{2, 1, 1, 0}));
}

TEST(KernelFile, MalformedFilesAreRefused) {
  EXPECT_THROW(parse_kernel_text("", "empty.txt"), Error);
  EXPECT_THROW(parse_kernel_text("# only a comment\n", "c.txt"), Error);
  EXPECT_THROW(parse_kernel_text("1 2\n3\n", "ragged.txt"), Error);
  EXPECT_THROW(parse_kernel_text("1 x 2\n", "word.txt"), Error);
  EXPECT_THROW(parse_kernel_text("1 nan 2\n", "nan.txt"), Error);
  try {
    parse_kernel_text("1 2\n3\n", "ragged.txt");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ragged.txt:2"), std::string::npos) << e.what();
  }
  std::string big;
  for (int i = 0; i < kMaxSeparableTaps + 1; ++i) big += "1 ";
  EXPECT_THROW(parse_kernel_text(big, "big.txt"), Error);  // one row: up to kMaxSeparableTaps
  std::string wide2d;
  for (int i = 0; i < kMaxKernelSide + 1; ++i) wide2d += "1 ";
  wide2d += "\n" + wide2d + "\n";
  try {
    parse_kernel_text(wide2d, "wide.txt");  // two rows: 2-D, up to kMaxKernelSide
    ADD_FAILURE() << "a 1024x2 kernel passed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Limit);
    EXPECT_NE(std::string(e.what()).find("1023x1023"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_kernel_file("/nonexistent/k.txt"), Error);
}

TEST(KernelFile, LargestSizesWork) {
  std::string text;
  for (int y = 0; y < 63; ++y) {
    for (int x = 0; x < 63; ++x) text += std::to_string((x * 7 + y * 13) % 11 - 5) + " ";
    text += "\n";
  }
  const Kernel k = parse_kernel_text(text, "k63");
  EXPECT_EQ(k.width, 63);
  EXPECT_EQ(k.height, 63);
  // One row or one column of kMaxSeparableTaps: a separable convolution.
  std::string row, column;
  for (int i = 0; i < kMaxSeparableTaps; ++i) {
    row += "1 ";
    column += "2\n";
  }
  const Convolution r = make_convolution(parse_kernel_text(row, "row"));
  EXPECT_TRUE(r.separable);
  EXPECT_EQ(r.row.size(), static_cast<std::size_t>(kMaxSeparableTaps));
  const Convolution c = make_convolution(parse_kernel_text(column, "column"));
  EXPECT_TRUE(c.separable);
  EXPECT_EQ(c.col.size(), static_cast<std::size_t>(kMaxSeparableTaps));
}

TEST(Limits, PresetsReachTheIssuesRangesAndSayWhereTheyEnd) {
  // gaussian sigma 500: radius ceil(3 sigma) = 1500, 3001 taps a pass; box and unsharp radius 2000.
  const Stage g = parse_filter_spec("gaussian:sigma=500");
  EXPECT_TRUE(g.convs[0].separable);
  EXPECT_EQ(g.convs[0].row.size(), 3001u);
  EXPECT_EQ(g.halo(), (Halo{1500, 1500, 1500, 1500}));
  EXPECT_TRUE(g.convs[0].kernel.taps.empty()) << "no 3001^2 2-D form";
  const Stage b = parse_filter_spec("box:radius=2000");
  EXPECT_EQ(b.convs[0].row.size(), 4001u);
  const Stage u = parse_filter_spec("unsharp:sigma=300,amount=1,radius=2000");
  ASSERT_EQ(u.convs.size(), 2u);
  EXPECT_EQ(u.combine, Combine::Sum);
  EXPECT_FALSE(u.convs[0].separable);
  EXPECT_EQ(u.convs[0].kernel.width, 1);
  EXPECT_TRUE(u.convs[1].separable);
  EXPECT_EQ(u.halo(), (Halo{2000, 2000, 2000, 2000}));
  // Up to radius 127 unsharp is the 2-D kernel it always was.
  EXPECT_EQ(parse_filter_spec("unsharp:sigma=42").combine, Combine::Single);
  EXPECT_NE(error_of("gaussian:sigma=700").find("out of range [0.1, 680]"), std::string::npos);
  EXPECT_NE(error_of("box:radius=2048").find("out of range [1, 2047]"), std::string::npos);
  EXPECT_NE(error_of("unsharp:sigma=2,radius=3000").find("out of range [0, 2047]"), std::string::npos);
  // A chain's summed reach has a limit too.
  try {
    parse_chain({"box:radius=2047", "box:radius=2047", "box:radius=2047", "box:radius=2047", "box:radius=2047"});
    ADD_FAILURE() << "a chain reaching 10235 pixels passed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Limit);
  }
  EXPECT_NO_THROW(parse_chain({"box:radius=2047", "gaussian:sigma=680", "box:radius=2047", "box:radius=2047"}));
}

TEST(Separable, DetectsRankOneAndRejectsOthers) {
  std::vector<float> row, col;
  EXPECT_TRUE(factor_separable(parse_kernel_text("1 2 1\n2 4 2\n1 2 1\n", "k"), row, col));
  EXPECT_EQ(row.size(), 3u);
  EXPECT_FALSE(factor_separable(parse_kernel_text("0 1 0\n1 -4 1\n0 1 0\n", "k"), row, col));
  EXPECT_FALSE(factor_separable(parse_kernel_text("0 0\n0 0\n", "k"), row, col));
  const Stage s = parse_filter_spec("custom:file=" + write_file("tf-sep.txt", "1 2 3\n2 4 6\n"));
  EXPECT_TRUE(s.convs[0].separable);
}

TEST(Separable, NormalizeDividesBySum) {
  const Stage s = parse_filter_spec("custom:file=" + write_file("tf-norm.txt", "1 2 1\n") + ",normalize=true");
  EXPECT_FLOAT_EQ(s.convs[0].kernel.at(1, 0), 0.5f);
  EXPECT_THROW(parse_filter_spec("custom:file=" + write_file("tf-zero.txt", "1 -1\n") + ",normalize=true"), Error);
}

}  // namespace
}  // namespace tf
