#include "mip_levels.hpp"

#include <algorithm>
#include <cmath>

namespace tf::gui {

std::vector<QImage> mip_levels(const QImage& base, int min_side) {
  std::vector<QImage> out;
  QImage prev = base;
  while (std::max(prev.width(), prev.height()) > min_side) {
    prev = prev.scaled(std::max(1, (prev.width() + 1) / 2), std::max(1, (prev.height() + 1) / 2), Qt::IgnoreAspectRatio,
                       Qt::SmoothTransformation);
    out.push_back(prev);
  }
  return out;
}

const QImage& ShownImage::level_for(double zoom) const {
  if (mips.empty() || zoom >= 0.5) return base;
  const int k = std::min(static_cast<int>(std::floor(std::log2(1.0 / zoom))), static_cast<int>(mips.size()));
  return k <= 0 ? base : mips[static_cast<std::size_t>(k - 1)];
}

ShownImage make_shown(QImage base) {
  std::vector<QImage> mips = mip_levels(base);
  return ShownImage(std::move(base), std::move(mips));
}

}  // namespace tf::gui
