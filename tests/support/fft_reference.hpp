// The FFT path's yardstick, shared by the CPU and GPU FFT tests: a float64 direct convolution
// (correlation, filter2D's sense) of the padded input the CPU builds, and the bound docs/design.md
// states, |y - y64| <= kFftBound * sum|k| * max|x| before quantization.
#pragma once
#include <vector>

#include "tilefilter/filters/filter.hpp"
#include "tilefilter/image/border.hpp"
#include "tilefilter/image/image.hpp"

namespace tf::test {

constexpr double kFftBound = 1e-5;  // the bound docs/design.md states

// One sample of a u8/u16/f32 view as a double.
double sample(const ImageView& v, int x, int y, int c);

struct FftReference {
  std::vector<double> values;  // height x width x channels, not quantized
  double scale = 0;            // sum|k| * max|x| over the padded input
};

// Stage's single convolution over `src` padded as cpu::load_padded pads it (border value quantized).
FftReference float64_reference(const Image& src, const Stage& stage, const Border& border);

// Largest |out - quantized(reference)| over the image.
double max_error(const Image& out, const FftReference& ref);

// What the bound allows once quantized: integers one level while the bound itself is below 1.
double allowed(const FftReference& ref, PixelType type);

}  // namespace tf::test
