// Every preset, border mode, pixel type and channel count against OpenCV (the test oracle):
// pad with copyMakeBorder (OpenCV's own border meanings, wrap included), filter2D / sepFilter2D,
// take the valid region. Integer outputs within 1, float relative error <= 1e-5.
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <fstream>
#include <random>

#include "test_support.hpp"
#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/filters/filter.hpp"

namespace tf {
namespace {

int cv_depth(PixelType t) { return t == PixelType::U8 ? CV_8U : t == PixelType::U16 ? CV_16U : CV_32F; }

cv::Mat as_mat(const ImageView& v) {
  return cv::Mat(v.height, v.width, CV_MAKETYPE(cv_depth(v.format.type), v.format.channels), v.data, v.pitch);
}

int cv_border(BorderMode m) {
  switch (m) {
    case BorderMode::Reflect101: return cv::BORDER_REFLECT_101;
    case BorderMode::Reflect: return cv::BORDER_REFLECT;
    case BorderMode::Replicate: return cv::BORDER_REPLICATE;
    case BorderMode::Constant: return cv::BORDER_CONSTANT;
    case BorderMode::Wrap: return cv::BORDER_WRAP;
  }
  return cv::BORDER_DEFAULT;
}

// One convolution by OpenCV over a padded float copy; result in float (no rounding yet).
cv::Mat cv_convolve(const cv::Mat& padded_f32, const Convolution& c, const Halo& stage_halo, cv::Size out) {
  const Halo h = c.halo();
  const cv::Rect roi(stage_halo.left - h.left, stage_halo.top - h.top, out.width + h.left + h.right,
                     out.height + h.top + h.bottom);
  cv::Mat src = padded_f32(roi), dst;
  const cv::Point anchor(c.kernel.anchor_x, c.kernel.anchor_y);
  if (c.separable) {
    cv::Mat row(1, static_cast<int>(c.row.size()), CV_32F, const_cast<float*>(c.row.data()));
    cv::Mat col(static_cast<int>(c.col.size()), 1, CV_32F, const_cast<float*>(c.col.data()));
    if (c.row.size() + c.col.size() > 2000) {
      // Thousands of taps: two filter2D passes, which OpenCV runs through its DFT (sepFilter2D
      // would take minutes on the 3000-pixel-padded plane); its float error stays far below the
      // tolerances here.
      cv::Mat rows;
      cv::filter2D(src, rows, CV_32F, row, cv::Point(anchor.x, 0), 0, cv::BORDER_CONSTANT);
      cv::filter2D(rows, dst, CV_32F, col, cv::Point(0, anchor.y), 0, cv::BORDER_CONSTANT);
    } else {
      cv::sepFilter2D(src, dst, CV_32F, row, col, anchor, 0, cv::BORDER_CONSTANT);
    }
  } else {
    cv::Mat k(c.kernel.height, c.kernel.width, CV_32F, const_cast<float*>(c.kernel.taps.data()));
    cv::filter2D(src, dst, CV_32F, k, anchor, 0, cv::BORDER_CONSTANT);
  }
  return dst(cv::Rect(h.left, h.top, out.width, out.height)).clone();
}

Image opencv_reference(const Image& src, const Stage& stage, const Border& border) {
  const Halo h = stage.halo();
  cv::Mat padded, f32;
  const double value = cpu::quantized_border_value(border, src.format().type);
  cv::copyMakeBorder(as_mat(src.view()), padded, h.top, h.bottom, h.left, h.right, cv_border(border.mode),
                     cv::Scalar::all(value));
  padded.convertTo(f32, CV_MAKETYPE(CV_32F, src.format().channels));
  const cv::Size size(src.width(), src.height());
  cv::Mat result = cv_convolve(f32, stage.convs[0], h, size);
  if (stage.combine == Combine::Magnitude) {
    cv::Mat b = cv_convolve(f32, stage.convs[1], h, size);
    cv::Mat a1 = result.reshape(1), b1 = b.reshape(1), m;
    cv::magnitude(a1, b1, m);
    result = m.reshape(src.format().channels);
  } else if (stage.combine == Combine::Sum) {
    result = result + cv_convolve(f32, stage.convs[1], h, size);
  }
  Image out(src.width(), src.height(), src.format());
  result.convertTo(as_mat(out.view()), as_mat(out.view()).type());  // rounds half to even, saturates
  return out;
}

struct Case {
  std::string spec;
  BorderMode border;
  Format format;
};

std::string kernel_file(const std::string& name, int w, int h, std::uint32_t seed, bool positive) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(positive ? 0.0 : -1.0, 1.0);
  std::ofstream f(path);
  f << "# random " << w << "x" << h << " kernel\n";
  double total = 0;
  std::vector<double> v(w * h);
  for (auto& x : v) total += (x = dist(rng));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) f << (x ? ", " : "") << v[y * w + x] / (positive ? total : w * h / 4.0);
    f << "\n";
  }
  return path;
}

void check_against_opencv(const std::string& spec, BorderMode mode, Format fmt, int w, int h, std::uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << spec << " border " << to_string(mode) << " " << to_string(fmt) << " " << w << "x"
                                    << h << " seed " << seed);
  const Image src = test::random_image(w, h, fmt, seed);
  const Stage stage = parse_filter_spec(spec);
  Border border{mode, fmt.type == PixelType::F32 ? 0.25f : 77.0f};
  JobOptions opt;
  opt.exact = true;  // the direct path (the FFT path has its own bound: test_fft.cpp)
  opt.border = border;
  const Image ours = filter_image(src, {stage}, select_devices("cpu:2").devices, opt);
  const Image ref = opencv_reference(src, stage, border);
  const auto d = test::compare(ours.view(), ref.view());
  if (fmt.type == PixelType::F32) EXPECT_LE(d.max_rel, 1e-5) << "at " << d.x << "," << d.y << " c" << d.c;
  else EXPECT_LE(d.max_abs, 1.0) << "at " << d.x << "," << d.y << " c" << d.c;
}

const BorderMode kModes[] = {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Constant,
                             BorderMode::Wrap};
const PixelType kTypes[] = {PixelType::U8, PixelType::U16, PixelType::F32};

class Presets : public ::testing::TestWithParam<std::string> {};

TEST_P(Presets, MatchOpenCVEveryBorderTypeAndChannelCount) {
  std::uint32_t seed = test::test_seed(1000);
  for (auto mode : kModes)
    for (auto type : kTypes)
      for (int channels : {1, 3, 4}) check_against_opencv(GetParam(), mode, Format{type, channels}, 61, 37, seed++);
}

INSTANTIATE_TEST_SUITE_P(Oracle, Presets,
                         ::testing::Values("box:radius=2", "gaussian:sigma=1.5", "gaussian:sigma=3,radius=4",
                                           "sharpen:amount=0.7", "unsharp:sigma=1.2,amount=1.5", "sobel:dir=x",
                                           "sobel:dir=y", "sobel:dir=magnitude", "laplacian", "emboss", "identity"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (auto& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(Oracle, CustomKernelsOfManyShapes) {
  std::uint32_t seed = test::test_seed(2000);
  // Odd, even, non-square, 1x1, a row, a column, and the largest sizes the issue names.
  const std::pair<int, int> shapes[] = {{1, 1}, {2, 2}, {4, 3}, {5, 5}, {1, 7}, {9, 1}, {6, 11}, {31, 31}, {63, 63}};
  for (auto [kw, kh] : shapes) {
    const bool positive = kw * kh > 100;  // large kernels normalized: no catastrophic cancellation in the oracle
    const std::string file = kernel_file("tf-oracle-kernel.txt", kw, kh, seed, positive);
    for (auto mode : {BorderMode::Reflect101, BorderMode::Wrap, BorderMode::Constant})
      for (auto type : kTypes)
        check_against_opencv("custom:file=" + file, mode, Format{type, type == PixelType::U16 ? 1 : 4},
                             kw > 30 ? 40 : 53, kh > 30 ? 35 : 29, seed++);
  }
}

TEST(Oracle, SeparableCustomKernelIsDetectedAndStillMatches) {
  const std::string path = (std::filesystem::temp_directory_path() / "tf-oracle-sep.txt").string();
  std::ofstream(path) << "1 2 3 2 1\n2 4 6 4 2\n-1 -2 -3 -2 -1\n";
  const Stage s = parse_filter_spec("custom:file=" + path + ",normalize=false");
  EXPECT_TRUE(s.convs[0].separable);
  for (auto mode : kModes) check_against_opencv("custom:file=" + path, mode, Format{PixelType::U8, 3}, 47, 31, 5);
}

TEST(Oracle, GaussianTapsAreOpenCVsGetGaussianKernel) {
  for (double sigma : {0.5, 1.0, 1.5, 2.7, 8.0})
    for (int r : {1, 3, 4, 12}) {
      const auto ours = gaussian_taps(sigma, r);
      cv::Mat k = cv::getGaussianKernel(2 * r + 1, sigma, CV_64F);
      for (int i = 0; i <= 2 * r; ++i)
        EXPECT_EQ(ours[i], static_cast<float>(k.at<double>(i))) << sigma << " " << r << " " << i;
    }
}

TEST(Oracle, BoxIsOpenCVsBlur) {
  const Image src = test::random_image(83, 41, Format{PixelType::U8, 3}, test::test_seed(77));
  JobOptions opt;
  const Image ours = filter_image(src, parse_chain({"box:radius=3"}), select_devices("cpu:2").devices, opt);
  cv::Mat ref;
  cv::blur(as_mat(src.view()), ref, cv::Size(7, 7), cv::Point(-1, -1), cv::BORDER_REFLECT_101);
  Image refimg(src.width(), src.height(), src.format());
  ref.copyTo(as_mat(refimg.view()));
  EXPECT_LE(test::compare(ours.view(), refimg.view()).max_abs, 1.0);
}

// Large kernels (issue 12): gaussian sigma 50, 150 and 500 (radius 150, 450 and 1500, halos far
// past the images), unsharp past the 2-D radius (a sum), and box radius 500 against OpenCV's blur.
TEST(Oracle, LargeKernelsMatchOpenCV) {
  std::uint32_t seed = test::test_seed(12300);
  for (const char* spec : {"gaussian:sigma=50", "unsharp:sigma=60,amount=1.5"})
    for (auto type : kTypes) {
      check_against_opencv(spec, BorderMode::Reflect101, Format{type, 3}, 61, 37, seed++);
      check_against_opencv(spec, BorderMode::Wrap, Format{type, 1}, 61, 37, seed++);
    }
  // 901 taps: OpenCV filters the whole 961x937 padded plane, so fewer cases.
  check_against_opencv("gaussian:sigma=150", BorderMode::Reflect101, Format{PixelType::U8, 3}, 61, 37, seed++);
  check_against_opencv("gaussian:sigma=150", BorderMode::Wrap, Format{PixelType::F32, 1}, 61, 37, seed++);
  check_against_opencv("gaussian:sigma=150", BorderMode::Constant, Format{PixelType::U16, 1}, 61, 37, seed++);
  // 3001 taps (the largest sigma the issue names): OpenCV's side is a 3000-pixel-padded plane, so
  // one small gray image per pixel type.
  check_against_opencv("gaussian:sigma=500", BorderMode::Reflect101, Format{PixelType::U8, 1}, 13, 11, seed++);
  check_against_opencv("gaussian:sigma=500", BorderMode::Wrap, Format{PixelType::U16, 1}, 13, 11, seed++);
  check_against_opencv("gaussian:sigma=500", BorderMode::Replicate, Format{PixelType::F32, 1}, 13, 11, seed++);
  for (auto type : kTypes) {
    const Image src = test::random_image(97, 53, Format{type, 3}, seed++);
    JobOptions opt;
    const Image ours = filter_image(src, parse_chain({"box:radius=500"}), select_devices("cpu:2").devices, opt);
    cv::Mat ref;
    cv::blur(as_mat(src.view()), ref, cv::Size(1001, 1001), cv::Point(-1, -1), cv::BORDER_REFLECT_101);
    Image refimg(src.width(), src.height(), src.format());
    ref.copyTo(as_mat(refimg.view()));
    const auto d = test::compare(ours.view(), refimg.view());
    if (type == PixelType::F32) EXPECT_LE(d.max_rel, 1e-5) << to_string(src.format());
    else EXPECT_LE(d.max_abs, 1.0) << to_string(src.format());
  }
}

TEST(Oracle, BorderIndexIsOpenCVsBorderInterpolate) {
  for (auto mode : {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Wrap})
    for (int n : {1, 2, 3, 7, 16})
      for (int p = -40; p < 40; ++p)
        EXPECT_EQ(border_index(p, n, mode), cv::borderInterpolate(p, n, cv_border(mode))) << p << " " << n;
}

}  // namespace
}  // namespace tf
