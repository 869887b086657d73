// Kernels, separability and the filter presets.
#include "tilefilter/filters/filter.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tilefilter/util/error.hpp"

namespace tf {

Kernel Kernel::from_rows(const std::vector<std::vector<double>>& rows) {
  Kernel k;
  k.height = static_cast<int>(rows.size());
  k.width = rows.empty() ? 0 : static_cast<int>(rows[0].size());
  k.anchor_x = k.width / 2;
  k.anchor_y = k.height / 2;
  for (const auto& r : rows)
    for (double v : r) k.taps.push_back(static_cast<float>(v));
  return k;
}

bool factor_separable(const Kernel& k, std::vector<float>& row, std::vector<float>& col) {
  // Rank 1 <=> every row is a multiple of the row holding the largest tap.
  int best = 0;
  for (int i = 1; i < static_cast<int>(k.taps.size()); ++i)
    if (std::fabs(k.taps[i]) > std::fabs(k.taps[best])) best = i;
  const double peak = k.taps.empty() ? 0.0 : k.taps[best];
  if (peak == 0.0) return false;
  const int by = best / k.width, bx = best % k.width;
  std::vector<double> r(k.width), c(k.height);
  for (int x = 0; x < k.width; ++x) r[x] = k.at(x, by);
  for (int y = 0; y < k.height; ++y) c[y] = k.at(bx, y) / peak;
  const double tolerance = 1e-6 * std::fabs(peak);
  for (int y = 0; y < k.height; ++y)
    for (int x = 0; x < k.width; ++x)
      if (std::fabs(c[y] * r[x] - k.at(x, y)) > tolerance) return false;
  row.assign(r.begin(), r.end());
  col.assign(c.begin(), c.end());
  return true;
}

Convolution make_separable(std::vector<float> row, std::vector<float> col) {
  Convolution c;
  c.separable = true;
  c.kernel.width = static_cast<int>(row.size());
  c.kernel.height = static_cast<int>(col.size());
  c.kernel.anchor_x = c.kernel.width / 2;
  c.kernel.anchor_y = c.kernel.height / 2;
  // The 2-D form only while it is small enough to be one (a 4095-tap box would be 16.8 M taps).
  if (row.size() * col.size() <= kMaxKernelTaps) {
    c.kernel.taps.reserve(row.size() * col.size());
    for (float cy : col)
      for (float rx : row) c.kernel.taps.push_back(static_cast<float>(static_cast<double>(cy) * rx));
  }
  c.row = std::move(row);
  c.col = std::move(col);
  return c;
}

Convolution make_convolution(const Kernel& k) {
  Convolution c;
  c.kernel = k;
  // A 1x1 or single row/column kernel is trivially rank 1; separable passes are cheaper for larger ones.
  if (k.width * k.height > 1 && factor_separable(k, c.row, c.col)) c.separable = true;
  return c;
}

Halo Stage::halo() const {
  Halo h;
  for (const auto& c : convs) {
    const Halo ch = c.halo();
    h.left = std::max(h.left, ch.left);
    h.top = std::max(h.top, ch.top);
    h.right = std::max(h.right, ch.right);
    h.bottom = std::max(h.bottom, ch.bottom);
  }
  return h;
}

Halo chain_halo(const Chain& chain) {
  Halo h;
  for (const auto& s : chain) h = h + s.halo();
  return h;
}

void check_chain_halo(const Chain& chain) {
  const Halo h = chain_halo(chain);
  const int widest = std::max({h.left, h.top, h.right, h.bottom});
  if (widest > kMaxChainHalo)
    throw Error(ErrorKind::Limit,
                fmt::format("the filter chain reaches {} pixels past a pixel, more than the limit of {}", widest,
                            kMaxChainHalo));
}

std::vector<float> gaussian_taps(double sigma, int radius) {
  // Same arithmetic as OpenCV's getGaussianKernel(2R+1, sigma, CV_64F), then rounded to float once.
  const int n = 2 * radius + 1;
  const double scale2 = -0.5 / (sigma * sigma);
  std::vector<double> t(n);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double x = i - (n - 1) * 0.5;
    t[i] = std::exp(scale2 * x * x);
    sum += t[i];
  }
  sum = 1.0 / sum;
  std::vector<float> taps(n);
  for (int i = 0; i < n; ++i) taps[i] = static_cast<float>(t[i] * sum);
  return taps;
}

const std::vector<FilterInfo>& filter_catalog() {
  using K = ParamInfo::Kind;
  static const std::vector<FilterInfo> kCatalog = {
      {"box",
       "mean over a (2R+1)x(2R+1) window, like OpenCV blur",
       {{"radius", K::Integer, 1, kMaxPresetRadius, 1, {}, "", "window radius R in pixels"}}},
      {"gaussian",
       "Gaussian blur, taps as OpenCV getGaussianKernel(2R+1, sigma)",
       {{"sigma", K::Number, 0.1, kMaxPresetSigma, 1.5, {}, "", "standard deviation in pixels"},
        {"radius", K::Integer, 0, kMaxPresetRadius, 0, {}, "", "kernel radius R; 0 = ceil(3*sigma)"}}},
      {"sharpen",
       "3x3 Laplacian sharpening: centre 1+4A, edge neighbours -A",
       {{"amount", K::Number, 0, 10, 1, {}, "", "strength A"}}},
      {"unsharp",
       "unsharp mask: (1+A)*image - A*gaussian(image)",
       {{"sigma", K::Number, 0.1, kMaxPresetSigma, 1.5, {}, "", "blur standard deviation"},
        {"amount", K::Number, 0, 10, 1, {}, "", "strength A"},
        {"radius", K::Integer, 0, kMaxPresetRadius, 0, {}, "", "blur radius R; 0 = ceil(3*sigma)"}}},
      {"sobel",
       "Sobel 3x3 derivative (OpenCV Sobel ksize=3), or the gradient magnitude",
       {{"dir", K::Choice, 0, 0, 0, {"x", "y", "magnitude"}, "magnitude", "x, y or magnitude sqrt(gx^2+gy^2)"}}},
      {"laplacian", "3x3 Laplacian [0 1 0; 1 -4 1; 0 1 0] (OpenCV Laplacian ksize=1)", {}},
      {"emboss", "3x3 emboss [-2 -1 0; -1 1 1; 0 1 2]", {}},
      {"identity", "copies the image (a 1x1 kernel); baseline for benchmarks", {}},
      {"custom",
       "kernel from a text file, applied like OpenCV filter2D (correlation, anchor at centre)",
       {{"file",
         K::Path,
         0,
         0,
         0,
         {},
         "",
         "text file: rows of numbers, spaces or commas, # comments; 2-D up to 1023x1023, one row or column up to 4095"},
        {"normalize", K::Bool, 0, 1, 0, {}, "", "divide the taps by their sum"}}},
  };
  return kCatalog;
}

namespace {

std::vector<double> double_taps(const std::vector<float>& f) { return {f.begin(), f.end()}; }

// ceil(3 sigma), at most the largest preset radius (sigma's range keeps it below).
int auto_radius(double sigma) { return std::min(kMaxPresetRadius, static_cast<int>(std::ceil(3 * sigma))); }

// unsharp up to this radius is one 2-D kernel (bit-identical to earlier versions), beyond it a sum.
constexpr int kUnsharp2DRadius = 127;

Kernel kernel3(std::initializer_list<double> v) {
  std::vector<std::vector<double>> rows(3);
  int i = 0;
  for (double x : v) rows[i++ / 3].push_back(x);
  return Kernel::from_rows(rows);
}

}  // namespace

void normalize_taps(std::vector<float>& taps, const std::string& origin) {
  double sum = 0;
  for (float t : taps) sum += t;
  if (sum == 0) throw Error(ErrorKind::InvalidArgument, fmt::format("{}: cannot normalize, the taps sum to 0", origin));
  for (float& t : taps) t = static_cast<float>(t / sum);
}

Stage kernel_stage(Kernel k, bool normalize, const std::string& name, const std::string& origin) {
  if (normalize) normalize_taps(k.taps, origin);
  Stage s;
  s.name = name;
  s.convs.push_back(make_convolution(k));
  return s;
}

// Builders used by the spec parser (filter_spec.cpp) once parameters are validated.
Stage build_stage(const std::string& name, const std::map<std::string, double>& num,
                  const std::map<std::string, std::string>& text, const std::string& spec) {
  Stage s;
  s.name = spec;
  if (name == "box") {
    const int r = static_cast<int>(num.at("radius"));
    std::vector<float> taps(2 * r + 1, static_cast<float>(1.0 / (2 * r + 1)));
    s.convs.push_back(make_separable(taps, taps));
    s.convs.back().box_sum = r >= kBoxSumMinRadius;
  } else if (name == "gaussian") {
    const double sigma = num.at("sigma");
    int r = static_cast<int>(num.at("radius"));
    if (r == 0) r = auto_radius(sigma);
    auto taps = gaussian_taps(sigma, r);
    s.convs.push_back(make_separable(taps, taps));
  } else if (name == "sharpen") {
    const double a = num.at("amount");
    s.convs.push_back(make_convolution(kernel3({0, -a, 0, -a, 1 + 4 * a, -a, 0, -a, 0})));
  } else if (name == "unsharp") {
    const double sigma = num.at("sigma"), a = num.at("amount");
    int r = static_cast<int>(num.at("radius"));
    if (r == 0) r = auto_radius(sigma);
    auto g = double_taps(gaussian_taps(sigma, r));
    const int n = 2 * r + 1;
    if (r <= kUnsharp2DRadius) {
      // One 2-D kernel (2R+1)^2 taps: the arithmetic unsharp always had up to this radius.
      std::vector<std::vector<double>> rows(n, std::vector<double>(n));
      for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) rows[y][x] = -a * g[y] * g[x] + (x == r && y == r ? 1 + a : 0);
      s.convs.push_back(make_convolution(Kernel::from_rows(rows)));
    } else {
      // Wider: (1+A)*image as a 1x1 kernel, plus a separable -A*gaussian, summed (Combine::Sum):
      // 2(2R+1) + 1 FMAs a pixel instead of (2R+1)^2.
      s.convs.push_back(make_convolution(Kernel::from_rows({{1 + a}})));
      std::vector<float> row(n), col(n);
      for (int i = 0; i < n; ++i) {
        row[i] = static_cast<float>(g[i]);
        col[i] = static_cast<float>(-a * g[i]);
      }
      s.convs.push_back(make_separable(std::move(row), std::move(col)));
      s.combine = Combine::Sum;
    }
  } else if (name == "sobel") {
    const std::string& dir = text.at("dir");
    auto dx = make_separable({-1, 0, 1}, {1, 2, 1});
    auto dy = make_separable({1, 2, 1}, {-1, 0, 1});
    if (dir == "x") s.convs.push_back(dx);
    else if (dir == "y") s.convs.push_back(dy);
    else {
      s.convs = {dx, dy};
      s.combine = Combine::Magnitude;
    }
  } else if (name == "laplacian") {
    s.convs.push_back(make_convolution(kernel3({0, 1, 0, 1, -4, 1, 0, 1, 0})));
  } else if (name == "emboss") {
    s.convs.push_back(make_convolution(kernel3({-2, -1, 0, -1, 1, 1, 0, 1, 2})));
  } else if (name == "identity") {
    s.convs.push_back(make_convolution(Kernel::from_rows({{1.0}})));
  } else if (name == "custom") {
    s = kernel_stage(load_kernel_file(text.at("file")), num.at("normalize") != 0, spec, text.at("file"));
    s.kernel_file = text.at("file");
  } else {
    throw Error(ErrorKind::InvalidArgument, fmt::format("unknown filter '{}'", name));
  }
  return s;
}

}  // namespace tf
