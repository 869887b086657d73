// The naive reference (see naive_reference.hpp for the arithmetic it implements). Deliberately plain:
// whole-image planes of float samples, one loop nest per pass, no tiling, no vectors, no threads.
#include "naive_reference.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace tf::test {

namespace {

// A whole image as float samples (u8/u16 convert exactly), interleaved channels.
struct Samples {
  int width = 0, height = 0, channels = 0;
  std::vector<float> v;
  float at(int x, int y, int c) const { return v[(static_cast<std::size_t>(y) * width + x) * channels + c]; }
};

Samples read_samples(const ImageView& img) {
  Samples s;
  s.width = img.width;
  s.height = img.height;
  s.channels = img.format.channels;
  const std::size_t per_row = static_cast<std::size_t>(img.width) * img.format.channels;
  s.v.reserve(per_row * img.height);
  for (int y = 0; y < img.height; ++y)
    for (std::size_t i = 0; i < per_row; ++i) {
      switch (img.format.type) {
        case PixelType::U8: s.v.push_back(static_cast<float>(img.row_as<const std::uint8_t>(y)[i])); break;
        case PixelType::U16: s.v.push_back(static_cast<float>(img.row_as<const std::uint16_t>(y)[i])); break;
        case PixelType::F32: s.v.push_back(img.row_as<const float>(y)[i]); break;
      }
    }
  return s;
}

// A value as the image type holds it: integers rounded (ties to even) and saturated.
float as_stored(float v, PixelType type) {
  if (type == PixelType::F32) return v;
  const float hi = type == PixelType::U8 ? 255.0f : 65535.0f;
  const float r = naive_round_half_even(v);
  if (r < 0.0f) return 0.0f;
  if (r > hi) return hi;
  return r;
}

void write_samples(const Samples& s, const ImageView& img) {
  const std::size_t per_row = static_cast<std::size_t>(img.width) * img.format.channels;
  for (int y = 0; y < img.height; ++y)
    for (std::size_t i = 0; i < per_row; ++i) {
      const float v = s.v[static_cast<std::size_t>(y) * per_row + i];
      switch (img.format.type) {
        case PixelType::U8:
          img.row_as<std::uint8_t>(y)[i] = static_cast<std::uint8_t>(as_stored(v, PixelType::U8));
          break;
        case PixelType::U16:
          img.row_as<std::uint16_t>(y)[i] = static_cast<std::uint16_t>(as_stored(v, PixelType::U16));
          break;
        case PixelType::F32: img.row_as<float>(y)[i] = v; break;
      }
    }
}

// The input of a stage padded on every side by what its kernels reach (left/top/right/bottom
// margins), each outside sample taken from the border mode: after this, no index leaves the plane.
struct Padded {
  int left = 0, top = 0;  // image (0,0) is plane (left, top)
  Samples plane;
  float at(int x, int y, int c) const { return plane.at(x + left, y + top, c); }  // image coordinates
};

Padded pad(const Samples& s, const Stage& stage, BorderMode mode, float fill) {
  int left = 0, top = 0, right = 0, bottom = 0;
  for (const Convolution& conv : stage.convs) {
    left = std::max(left, conv.kernel.anchor_x);
    top = std::max(top, conv.kernel.anchor_y);
    right = std::max(right, conv.kernel.width - 1 - conv.kernel.anchor_x);
    bottom = std::max(bottom, conv.kernel.height - 1 - conv.kernel.anchor_y);
  }
  Padded p;
  p.left = left;
  p.top = top;
  p.plane.width = s.width + left + right;
  p.plane.height = s.height + top + bottom;
  p.plane.channels = s.channels;
  for (int py = 0; py < p.plane.height; ++py)
    for (int px = 0; px < p.plane.width; ++px) {
      const int sx = naive_border_source(px - left, s.width, mode);
      const int sy = naive_border_source(py - top, s.height, mode);
      for (int c = 0; c < s.channels; ++c) p.plane.v.push_back(sx < 0 || sy < 0 ? fill : s.at(sx, sy, c));
    }
  return p;
}

// One convolution over the whole image, as float32 results (not yet stored in the image type).
// A box_sum convolution on integer samples: the exact sum over the window (int64, rows then
// columns: exact, so any order), divided by the window's area in double, rounded to float once.
Samples box_mean(const Padded& in, const Convolution& conv, int width, int height) {
  const Kernel& k = conv.kernel;
  const int ax = k.anchor_x, ay = k.anchor_y, C = in.plane.channels;
  const double area = static_cast<double>(k.width) * k.height;
  Samples out;
  out.width = width;
  out.height = height;
  out.channels = C;
  out.v.resize(static_cast<std::size_t>(width) * height * C);
  std::vector<std::int64_t> row_sums(static_cast<std::size_t>(width) * (height + k.height - 1) * C);
  for (int r = 0; r < height + k.height - 1; ++r)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < C; ++c) {
        std::int64_t s = 0;
        for (int i = 0; i < k.width; ++i) s += static_cast<std::int64_t>(in.at(x + i - ax, r - ay, c));
        row_sums[(static_cast<std::size_t>(r) * width + x) * C + c] = s;
      }
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < C; ++c) {
        std::int64_t s = 0;
        for (int j = 0; j < k.height; ++j) s += row_sums[(static_cast<std::size_t>(y + j) * width + x) * C + c];
        out.v[(static_cast<std::size_t>(y) * width + x) * C + c] = static_cast<float>(static_cast<double>(s) / area);
      }
  return out;
}

Samples correlate(const Padded& in, const Convolution& conv, int width, int height, PixelType type) {
  if (conv.box_sum && type != PixelType::F32) return box_mean(in, conv, width, height);
  const Kernel& k = conv.kernel;
  const int ax = k.anchor_x, ay = k.anchor_y, C = in.plane.channels;
  Samples out;
  out.width = width;
  out.height = height;
  out.channels = C;
  out.v.resize(static_cast<std::size_t>(width) * height * C);
  auto set = [&](Samples& s, int x, int y, int c, float v) {
    s.v[(static_cast<std::size_t>(y) * s.width + x) * C + c] = v;
  };
  if (conv.separable) {
    // Row pass, for every padded row the column pass reads, into a float32 intermediate.
    const int first_row = -ay, rows = height + static_cast<int>(conv.col.size()) - 1;
    Samples mid;
    mid.width = width;
    mid.height = rows;
    mid.channels = C;
    mid.v.resize(static_cast<std::size_t>(width) * rows * C);
    for (int r = 0; r < rows; ++r)
      for (int x = 0; x < width; ++x)
        for (int c = 0; c < C; ++c) {
          float acc = 0.0f;
          for (std::size_t i = 0; i < conv.row.size(); ++i)
            acc = std::fma(in.at(x + static_cast<int>(i) - ax, first_row + r, c), conv.row[i], acc);
          set(mid, x, r, c, acc);
        }
    // Column pass: output row y reads intermediate rows y .. y + col.size() - 1.
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        for (int c = 0; c < C; ++c) {
          float acc = 0.0f;
          for (std::size_t j = 0; j < conv.col.size(); ++j)
            acc = std::fma(mid.at(x, y + static_cast<int>(j), c), conv.col[j], acc);
          set(out, x, y, c, acc);
        }
  } else {
    // General 2-D kernel: taps in row-major order.
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        for (int c = 0; c < C; ++c) {
          float acc = 0.0f;
          for (int j = 0; j < k.height; ++j)
            for (int i = 0; i < k.width; ++i)
              acc = std::fma(in.at(x + i - ax, y + j - ay, c), k.taps[static_cast<std::size_t>(j) * k.width + i], acc);
          set(out, x, y, c, acc);
        }
  }
  return out;
}

Samples apply_stage(const Stage& stage, const Samples& src, const Border& border, PixelType type) {
  if (stage.convs.empty()) throw std::invalid_argument("naive_filter: a stage without convolutions");
  const Padded in = pad(src, stage, border.mode, as_stored(border.value, type));
  Samples out = correlate(in, stage.convs[0], src.width, src.height, type);
  if (stage.combine != Combine::Single) {
    const Samples second = correlate(in, stage.convs.at(1), src.width, src.height, type);
    for (std::size_t i = 0; i < out.v.size(); ++i) {
      const float a = out.v[i], b = second.v[i];
      if (stage.combine == Combine::Sum) {
        out.v[i] = a + b;
      } else {
        const float b2 = b * b;
        out.v[i] = std::sqrt(std::fma(a, a, b2));
      }
    }
  }
  for (float& v : out.v) v = as_stored(v, type);  // the stage's result as the image type holds it
  return out;
}

}  // namespace

int naive_border_source(int p, int n, BorderMode mode) {
  if (p >= 0 && p < n) return p;
  // Non-negative p mod m for any p.
  auto mod = [](int a, int m) {
    const int r = a % m;
    return r < 0 ? r + m : r;
  };
  switch (mode) {
    case BorderMode::Constant: return -1;
    case BorderMode::Replicate: return p < 0 ? 0 : n - 1;
    case BorderMode::Wrap: return mod(p, n);
    case BorderMode::Reflect: {
      // Period 2n: 0 1 .. n-1 n-1 .. 1 0, repeated.
      const int m = mod(p, 2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
    case BorderMode::Reflect101: {
      // Period 2n-2: 0 1 .. n-1 n-2 .. 1, repeated (a single sample reflects onto itself).
      if (n == 1) return 0;
      const int period = 2 * n - 2;
      const int m = mod(p, period);
      return m < n ? m : period - m;
    }
  }
  throw std::invalid_argument("naive_border_source: unknown border mode");
}

float naive_round_half_even(float v) {
  const float down = std::floor(v);
  const float frac = v - down;  // exact: down and v are within one unit of each other
  if (frac < 0.5f) return down;
  if (frac > 0.5f) return down + 1.0f;
  return std::fmod(down, 2.0f) == 0.0f ? down : down + 1.0f;  // a tie: the even neighbour
}

Image naive_filter(const Image& src, const Chain& chain, const Border& border) {
  const PixelType type = src.format().type;
  Samples current = read_samples(src.view());
  for (const Stage& stage : chain) current = apply_stage(stage, current, border, type);
  Image out(src.width(), src.height(), src.format());
  write_samples(current, out.view());
  return out;
}

}  // namespace tf::test
