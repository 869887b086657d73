// Images the project makes itself: photo-like content (smooth gradients, edges, texture, noise) and
// test charts, at any size and pixel type, from a seed. Used by tests, benchmarks and the samples.
#pragma once
#include <cstdint>

#include "tilefilter/image/image.hpp"

namespace tf {

enum class Pattern { Photo, Chart, Noise };
Image make_test_image(int width, int height, Format format, std::uint32_t seed, Pattern pattern = Pattern::Photo);
// The rows [first_row, first_row + rows.height) of the image make_test_image(rows.width,
// image_height, ...) would make, for images generated band by band.
void fill_test_rows(const ImageView& rows, int first_row, int image_height, std::uint32_t seed, Pattern pattern);

}  // namespace tf
