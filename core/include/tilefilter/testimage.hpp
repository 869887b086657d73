// Images the project makes itself: photo-like content (smooth gradients, edges, texture, noise) and
// test charts, at any size and pixel type, from a seed. Used by tests, benchmarks and the samples.
#pragma once
#include <cstdint>

#include "tilefilter/image.hpp"

namespace tf {

enum class Pattern { Photo, Chart, Noise };
Image make_test_image(int width, int height, Format format, std::uint32_t seed, Pattern pattern = Pattern::Photo);

}  // namespace tf
