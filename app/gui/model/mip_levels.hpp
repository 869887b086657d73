// Half-size copies of a paint-ready image, so that a zoomed-out view samples from a level near the
// screen's resolution instead of skipping pixels of the full one (which aliases fine texture into
// moiré). Made off the GUI thread together with the image they belong to.
#pragma once
#include <QImage>
#include <vector>

namespace tf::gui {

// Levels 1, 2, ... (each half the previous, area-averaged) until the longer side is below min_side.
std::vector<QImage> mip_levels(const QImage& base, int min_side = 384);

// An image as the view paints it: level 0 and its mips.
struct ShownImage {
  QImage base;
  std::vector<QImage> mips;
  ShownImage() = default;
  ShownImage(QImage image, std::vector<QImage> levels = {}) : base(std::move(image)), mips(std::move(levels)) {}
  // The level to sample for `zoom` screen pixels per image pixel (never one smaller than the screen).
  const QImage& level_for(double zoom) const;
  bool is_null() const { return base.isNull(); }
};

ShownImage make_shown(QImage base);

}  // namespace tf::gui
