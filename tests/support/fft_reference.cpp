#include "fft_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tilefilter/engine/cpu.hpp"

namespace tf::test {

double sample(const ImageView& v, int x, int y, int c) {
  switch (v.format.type) {
    case PixelType::U8: return v.row_as<std::uint8_t>(y)[x * v.format.channels + c];
    case PixelType::U16: return v.row_as<std::uint16_t>(y)[x * v.format.channels + c];
    case PixelType::F32: return v.row_as<float>(y)[x * v.format.channels + c];
  }
  return 0;
}

FftReference float64_reference(const Image& src, const Stage& stage, const Border& border) {
  const Kernel& k = stage.convs[0].kernel;
  const Halo h = k.halo();
  const ImageView& v = src.view();
  const int C = v.format.channels;
  cpu::Plane in;
  Border b = border;
  b.value = cpu::quantized_border_value(border, v.format.type);
  cpu::load_padded(v, Rect{-h.left, -h.top, v.width + h.left + h.right, v.height + h.top + h.bottom}, b, in);
  FftReference r;
  r.values.assign(static_cast<std::size_t>(v.width) * v.height * C, 0.0);
  double sum_abs = 0, max_abs = 0;
  for (float t : k.taps) sum_abs += std::abs(t);
  for (float x : in.data) max_abs = std::max(max_abs, static_cast<double>(std::abs(x)));
  r.scale = sum_abs * max_abs;
  for (int y = 0; y < v.height; ++y)
    for (int ky = 0; ky < k.height; ++ky) {
      const float* row = in.row(y + ky);
      for (int x = 0; x < v.width; ++x) {
        double* out = &r.values[(static_cast<std::size_t>(y) * v.width + x) * C];
        for (int kx = 0; kx < k.width; ++kx) {
          const double t = k.at(kx, ky);
          const float* px = row + static_cast<std::size_t>(x + kx) * C;
          for (int c = 0; c < C; ++c) out[c] += t * px[c];
        }
      }
    }
  return r;
}

namespace {

double quantized(double v, PixelType type) {
  if (type == PixelType::F32) return static_cast<float>(v);
  const double hi = type == PixelType::U8 ? 255 : 65535;
  return std::clamp(std::nearbyint(v), 0.0, hi);
}

}  // namespace

double max_error(const Image& out, const FftReference& ref) {
  const ImageView& v = out.view();
  const int C = v.format.channels;
  double worst = 0;
  for (int y = 0; y < v.height; ++y)
    for (int x = 0; x < v.width; ++x)
      for (int c = 0; c < C; ++c) {
        const double want = quantized(ref.values[(static_cast<std::size_t>(y) * v.width + x) * C + c], v.format.type);
        worst = std::max(worst, std::abs(sample(v, x, y, c) - want));
      }
  return worst;
}

double allowed(const FftReference& ref, PixelType type) {
  const double e = kFftBound * ref.scale;
  return type == PixelType::F32 ? e : std::floor(e) + 1;
}

}  // namespace tf::test
