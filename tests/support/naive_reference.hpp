// An independent reference for the convolution arithmetic: a naive, direct, single-threaded loop per
// output sample, written from contract 2 of docs/design.md and sharing no code with core/src/engine/cpu/.
// It reads its inputs through the public types only (Image, Kernel, Convolution, Stage, Chain,
// Border's mode and value) and computes everything else itself, border indices included.
//
// What it computes, for every stage of a chain in order, over the whole image:
//   * The input of a stage is the previous stage's output image (the source for the first), padded
//     with the border mode as OpenCV defines it (see naive_border_source). A constant border reads
//     the border value as the image type would hold it (rounded and saturated for u8/u16).
//   * A convolution is a correlation: out(x,y) = sum k(i,j) * in(x+i-anchor_x, y+j-anchor_y).
//     It accumulates in float32 from 0.0f with one std::fma per tap, acc = fma(in, tap, acc):
//       - general 2-D kernel: taps in row-major order (j outer, i inner);
//       - separable (Convolution::separable): a row pass over every padded row the column pass
//         reads, r(x,y') = fma over i in order of in(x+i-ax, y') * row[i] from 0.0f, stored as a
//         float32 intermediate; then the column pass acc = fma(r(x, y+j-ay), col[j], acc), j in order.
//       - a box_sum convolution (box wider than radius 127) on u8/u16 samples: the exact integer sum
//         S over the window, stored as float(double(S) / (width * height)); on f32 the separable FMAs.
//   * Combine::Magnitude: sqrt(fma(a, a, b * b)) in float, a and b the stage's two convolutions;
//     Combine::Sum: a + b in float (one rounding).
//   * The stage result is stored in the image type: u8/u16 round to nearest with ties to even, then
//     saturate to [0, 255] / [0, 65535]; f32 is stored as computed.
#pragma once
#include <cstdint>
#include <utility>

#include "tilefilter/filters/filter.hpp"
#include "tilefilter/image/border.hpp"  // only the Border/BorderMode types: border_index is not used
#include "tilefilter/image/image.hpp"

namespace tf::test {

// Where the border mode reads outside coordinate p of an axis of n samples (n >= 1), with OpenCV's
// meanings: reflect101 gfedcb|abcdefgh|gfedcba, reflect fedcba|abcdefgh|hgfedcb, replicate
// aaaaaa|abcdefgh|hhhhhhh, wrap cdefgh|abcdefgh|abcdefg; -1 for constant. Any p, also far outside.
int naive_border_source(int p, int n, BorderMode mode);

// Round to nearest, ties to even (the rounding of integer outputs), computed without rint.
float naive_round_half_even(float v);

// The chain applied to src filter by filter over the whole image, as described above.
Image naive_filter(const Image& src, const Chain& chain, const Border& border);

// The grid the CPU and the CUDA suites sweep against this reference: every border mode, pixel type
// and channel count, and sizes from one pixel to more than one tile of the smallest tilings.
inline constexpr BorderMode kReferenceModes[] = {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate,
                                                 BorderMode::Constant, BorderMode::Wrap};
inline constexpr PixelType kReferenceTypes[] = {PixelType::U8, PixelType::U16, PixelType::F32};
inline constexpr int kReferenceChannels[] = {1, 3, 4};
inline constexpr std::pair<int, int> kReferenceSizes[] = {{1, 1}, {7, 3}, {61, 37}, {257, 129}};

// The border for a mode; a constant border value halfway between two integers, so that its
// rounding (to even) is checked too.
inline Border reference_border(BorderMode m) { return Border{m, m == BorderMode::Constant ? 100.5f : 0.0f}; }

}  // namespace tf::test
