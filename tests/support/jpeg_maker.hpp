// JPEGs written with libjpeg itself, in the shapes the project's own writer never makes: a chosen
// chroma subsampling, progressive, CMYK. For the readers' tests and the GPU codec's.
#pragma once
#include <vector>

#include "tilefilter/image/image.hpp"

namespace tf::test {

struct JpegShape {
  int quality = 90;
  // Luma sampling factors: 1x1 = 4:4:4, 2x1 = 4:2:2, 2x2 = 4:2:0 (chroma at 1x1); gray images ignore them.
  int h_samp = 2, v_samp = 2;
  bool progressive = false;
  bool cmyk = false;  // img holds CMYK (4 channels), written as YCCK with Adobe's marker
};

// Throws std::runtime_error when this build has no libjpeg.
std::vector<unsigned char> libjpeg_encode(const ImageView& img, const JpegShape& shape = {});

}  // namespace tf::test
