#include "tilefilter/image/pyramid.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace tf {

namespace {

template <class T> void reduce(const ImageView& s, const ImageView& d) {
  const int c = s.format.channels;
  for (int y = 0; y < d.height; ++y) {
    const int y0 = 2 * y, y1 = std::min(2 * y + 1, s.height - 1);
    const T* r0 = s.row_as<const T>(y0);
    const T* r1 = s.row_as<const T>(y1);
    T* out = d.row_as<T>(y);
    for (int x = 0; x < d.width; ++x) {
      const int x0 = 2 * x, x1 = std::min(2 * x + 1, s.width - 1);
      for (int k = 0; k < c; ++k) {
        const double sum = double(r0[x0 * c + k]) + r0[x1 * c + k] + r1[x0 * c + k] + r1[x1 * c + k];
        if constexpr (std::is_floating_point_v<T>) out[x * c + k] = static_cast<T>(sum / 4);
        else out[x * c + k] = static_cast<T>((static_cast<std::uint64_t>(sum) + 2) / 4);
      }
    }
  }
}

}  // namespace

Image half_size(const Image& src) {
  Image dst(std::max(1, (src.width() + 1) / 2), std::max(1, (src.height() + 1) / 2), src.format());
  switch (src.format().type) {
    case PixelType::U8: reduce<std::uint8_t>(src.view(), dst.view()); break;
    case PixelType::U16: reduce<std::uint16_t>(src.view(), dst.view()); break;
    case PixelType::F32: reduce<float>(src.view(), dst.view()); break;
  }
  return dst;
}

ImagePyramid::ImagePyramid(const Image& base, int min_side) {
  if (base.empty()) return;
  levels_.push_back(base);
  while (std::max(levels_.back().width(), levels_.back().height()) > min_side)
    levels_.push_back(half_size(levels_.back()));
}

int ImagePyramid::level_for_factor(double factor) const {
  if (levels_.empty() || factor < 2) return 0;
  const int k = static_cast<int>(std::floor(std::log2(factor) + 1e-9));
  return std::clamp(k, 0, levels() - 1);
}

}  // namespace tf
