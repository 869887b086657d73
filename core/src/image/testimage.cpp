#include "tilefilter/image/testimage.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tf {

namespace {

std::uint32_t hash(std::uint32_t x) {  // lowbias32
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

float unit_noise(std::uint32_t seed, int x, int y, int c) {
  return static_cast<float>(hash(seed ^ hash(static_cast<std::uint32_t>(x) * 73856093U ^
                                             hash(static_cast<std::uint32_t>(y) * 19349663U + c))) >>
                            8) *
         (1.0f / 16777216.0f);
}

// A value in [0, 1] for pixel (x, y), channel c: gradients, discs with hard edges, a fine texture
// and noise, so that every filter has something to do and no region is constant.
float photo_value(std::uint32_t seed, int w, int h, int x, int y, int c) {
  const float u = (x + 0.5f) / w, v = (y + 0.5f) / h;
  float val = 0.25f + 0.3f * u * (c == 0 ? 1.0f : 0.5f) + 0.25f * v * (c == 1 ? 1.0f : 0.6f);
  for (int k = 0; k < 5; ++k) {
    const float cx = (hash(seed + 17 * k) % 1000) / 1000.0f, cy = (hash(seed + 31 * k + 5) % 1000) / 1000.0f;
    const float r = 0.05f + (hash(seed + 7 * k + 3) % 1000) / 4000.0f;
    const float dx = (u - cx) * w / std::max(w, h), dy = (v - cy) * h / std::max(w, h);
    if (dx * dx + dy * dy < r * r) val += (k % 2 ? 0.2f : -0.2f) * (1.0f + 0.3f * c);
  }
  val += 0.08f * std::sin(x * 0.37f + c) * std::cos(y * 0.23f);
  val += 0.03f * (unit_noise(seed, x, y, c) - 0.5f);
  return std::clamp(val, 0.0f, 1.0f);
}

float chart_value(std::uint32_t seed, int x, int y, int c) {
  const bool check = ((x / 8) + (y / 8)) % 2 == 0;
  float v = check ? 0.85f : 0.15f;
  v += 0.1f * ((x + 3 * c) % 16) / 16.0f;
  return std::clamp(v + 0.004f * unit_noise(seed, x, y, c), 0.0f, 1.0f);
}

}  // namespace

Image make_test_image(int width, int height, Format format, std::uint32_t seed, Pattern pattern) {
  Image img(width, height, format);
  fill_test_rows(img.view(), 0, height, seed, pattern);
  return img;
}

void fill_test_rows(const ImageView& rows, int first_row, int image_height, std::uint32_t seed, Pattern pattern) {
  const int width = rows.width, height = image_height;
  const Format format = rows.format;
  const ImageView v = window_view(rows, first_row, image_height);
  for (int r = 0; r < rows.height; ++r) {
    const int y = first_row + r;
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < format.channels; ++c) {
        float f = pattern == Pattern::Photo   ? photo_value(seed, width, height, x, y, c)
                  : pattern == Pattern::Chart ? chart_value(seed, x, y, c)
                                              : unit_noise(seed, x, y, c);
        if (format.channels == 4 && c == 3 && pattern == Pattern::Photo) f = 0.6f + 0.4f * f;  // mostly opaque
        const std::size_t i = static_cast<std::size_t>(x) * format.channels + c;
        switch (format.type) {
          case PixelType::U8: v.row_as<std::uint8_t>(y)[i] = static_cast<std::uint8_t>(std::lround(f * 255)); break;
          case PixelType::U16:
            v.row_as<std::uint16_t>(y)[i] = static_cast<std::uint16_t>(std::lround(f * 65535));
            break;
          case PixelType::F32: v.row_as<float>(y)[i] = f; break;
        }
      }
    }
  }
}

}  // namespace tf
