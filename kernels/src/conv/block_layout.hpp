// What one thread block of the convolution kernels keeps in shared memory, as host-and-device code:
// the kernels place their arrays by these layouts and the host-side launch-shape choice
// (launch_shape.cpp) sizes shared memory by them, so the two cannot disagree.
#pragma once
#include <cstddef>

#include "conv_kernels.hpp"

#if defined(__CUDACC__)
#define TF_HOST_DEVICE __host__ __device__
#else
#define TF_HOST_DEVICE
#endif

namespace tf::cuda::conv {

using S = KernelSchedule;
constexpr int kRun = S::kRun;

// Bytes of one staged pixel in shared memory and registers: a float for one channel, a float4 for
// three (padded) or four.
TF_HOST_DEVICE constexpr std::size_t staged_pixel_bytes(int channels) { return channels == 1 ? 4 : 16; }

// The separable kernel: `stage_rows` input rows of `cols` pixels (row stride `sw`), a ring of `rb`
// float32 rows (plus kMirror mirrored rows) between the row and the column pass, the taps and the
// block's column map.
struct SepLayout {
  int cols, sw, rb, stage_rows;
  static constexpr int kRingStride = S::kBlockWidth + 1;  // odd: row-pass stores of 8 rows hit distinct banks
  static constexpr int kMirror = kRun;                    // ring rows [0, 8) are also kept at [rb, rb + 8)
  TF_HOST_DEVICE SepLayout(int kw, int kh, int stage)
      : cols(S::kBlockWidth + kw - 1),
        sw(cols | 1),
        rb((S::kSepStepRows + kh - 1 + kRun - 1) / kRun * kRun),
        stage_rows(stage) {}
  TF_HOST_DEVICE std::size_t bytes(std::size_t px, int kw, int kh) const {
    return (static_cast<std::size_t>(stage_rows) * sw + static_cast<std::size_t>(rb + kMirror) * kRingStride) * px +
           static_cast<std::size_t>(kw + kh + cols) * 4 + 16;
  }
};

// The general 2-D kernel: rows() input rows of `cols` pixels (padded row stride `sw`), `chunk`
// kernel rows of taps (row stride `ts`, a multiple of kRun, zero-padded and 16-byte aligned, so
// a group of 8 taps is two 16-byte loads) and the block's column map.
struct GeneralLayout {
  int cols, sw, chunk, ts;
  TF_HOST_DEVICE GeneralLayout(int kw, int chunk_rows)
      : cols(S::kBlockWidth + kw - 1), chunk(chunk_rows), ts((kw + kRun - 1) / kRun * kRun) {
    sw = row_stride(cols);
  }
  // Padded pixels of `cols` columns (c at c + c / 8) and one more, rounded up to 2 (mod 4): the two
  // rows of a thread pair land 4 banks apart.
  static TF_HOST_DEVICE constexpr int row_stride(int cols) {
    const int p = cols + (cols >> 3) + 1;
    return p + ((2 - (p & 3)) & 3);
  }
  TF_HOST_DEVICE int rows() const { return S::kGeneralRows + chunk - 1; }
  TF_HOST_DEVICE std::size_t taps_offset(std::size_t px) const {
    return (static_cast<std::size_t>(rows()) * sw * px + 15) / 16 * 16;
  }
  TF_HOST_DEVICE std::size_t bytes(std::size_t px, int /*kw*/) const {
    return taps_offset(px) + static_cast<std::size_t>(chunk) * ts * 4 + static_cast<std::size_t>(cols) * 4 + 16;
  }
};

// The wide row launch (wide_rows_kernel): one staged input row of up to kWideSpan + kw + kRun
// pixels, stored with one padding pixel after every kRun (pixel c at c + c / kRun), so the kRun
// threads of a quarter-warp, whose runs start kRun pixels apart, read distinct banks; then the kw
// taps of one kernel row (16-byte aligned, read four at a time).
struct WideRowLayout {
  static TF_HOST_DEVICE int staged(int kw) { return S::kWideSpan + kw + kRun; }
  static TF_HOST_DEVICE int padded(int pixels) { return pixels + pixels / kRun + 1; }
  static TF_HOST_DEVICE std::size_t taps_offset(std::size_t px, int kw) {
    return (static_cast<std::size_t>(padded(staged(kw))) * px + 15) / 16 * 16;
  }
  static TF_HOST_DEVICE std::size_t bytes(std::size_t px, int kw) {
    return taps_offset(px, kw) + (static_cast<std::size_t>(kw) * 4 + 15) / 16 * 16;
  }
};

// The wide column launch (wide_columns_kernel): kWideColumnThreads threads cover a tile of
// `columns` x `rows` outputs, a thread one run of kRun rows of one column. Every staged row is 128
// bytes (8 float4 pixels or 32 float ones), so a quarter-warp's loads of one row hit distinct banks
// and a row is eight 16-byte copies. The kh column taps go in chunks of `chunk` taps: each chunk
// stages rows + chunk + kRun intermediate rows and the chunk's taps, as many as fit in shared
// memory (all of them up to 1256 taps of float4 pixels), so staged intermediate rows are read
// about (rows + kh) / rows times per output rather than kh / kRun times.
struct WideColumnLayout {
  static constexpr int kRowBytes = 128;
  int columns, rows, chunk;
  TF_HOST_DEVICE WideColumnLayout(int kh, int channels)
      : columns(kRowBytes / static_cast<int>(staged_pixel_bytes(channels))),
        rows(S::kWideColumnThreads / columns * kRun),
        chunk(0) {
    const int most = static_cast<int>((kMaxSharedPerBlock - 16 - static_cast<std::size_t>(rows + kRun) * kRowBytes) /
                                      (kRowBytes + 4)) /
                     kRun * kRun;
    chunk = kh < most ? kh : most;
  }
  TF_HOST_DEVICE int staged_rows() const { return rows + chunk + kRun; }
  TF_HOST_DEVICE std::size_t taps_offset() const { return static_cast<std::size_t>(staged_rows()) * kRowBytes; }
  TF_HOST_DEVICE std::size_t bytes() const {
    return taps_offset() + (static_cast<std::size_t>(chunk) * 4 + 15) / 16 * 16;
  }
};

}  // namespace tf::cuda::conv
