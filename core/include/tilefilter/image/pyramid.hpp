// Half-size copies of an image (2x2 box average, same pixel format), used for the screen-sized
// preview proxy of a large image (the GUI), Qt-free so any front end can use it. Level 0 is the image itself; level k
// is 1/2^k of it.
#pragma once
#include <vector>

#include "tilefilter/image/image.hpp"

namespace tf {

// One 2x2 box-average reduction; odd last rows/columns average what exists.
Image half_size(const Image& src);

class ImagePyramid {
 public:
  ImagePyramid() = default;
  // Builds levels until the image fits in `min_side` pixels on its longer side.
  ImagePyramid(const Image& base, int min_side = 512);

  int levels() const { return static_cast<int>(levels_.size()); }
  const Image& level(int k) const { return levels_.at(static_cast<std::size_t>(k)); }
  // The level at most `factor` times smaller than the base (factor rounded down to a power of 2).
  int level_for_factor(double factor) const;

 private:
  std::vector<Image> levels_;
};

}  // namespace tf
