#include "tilefilter/overview.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "tilefilter/error.hpp"

namespace tf {

namespace {

constexpr int kBandRows = 512;  // rows read at a time (a multiple of common TIFF tile heights)

template <class T> void accumulate(const ImageView& rows, int channels, int factor, std::vector<double>& sums) {
  for (int y = 0; y < rows.height; ++y) {
    const T* p = rows.row_as<const T>(y);
    for (int x0 = 0, ox = 0; x0 < rows.width; x0 += factor, ++ox) {
      double* s = &sums[static_cast<std::size_t>(ox) * channels];
      const T* q = p + static_cast<std::size_t>(x0) * channels;
      const int n = std::min(factor, rows.width - x0) * channels;
      for (int i = 0; i < n; i += channels)
        for (int c = 0; c < channels; ++c) s[c] += static_cast<double>(q[i + c]);
    }
  }
}

template <class T>
void store(const std::vector<double>& sums, const std::vector<double>& counts, int channels, T* out) {
  for (std::size_t x = 0; x < counts.size(); ++x)
    for (int c = 0; c < channels; ++c) {
      const double v = sums[x * channels + c] / counts[x];
      if constexpr (std::is_floating_point_v<T>) out[x * channels + c] = static_cast<T>(v);
      else out[x * channels + c] = static_cast<T>(std::floor(v + 0.5));
    }
}

void check_cancel(const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) throw Error(ErrorKind::Cancelled, "overview cancelled");
}

}  // namespace

int overview_factor(int width, int height, int max_side) {
  int f = 1;
  while ((std::max(width, height) + f - 1) / f > std::max(1, max_side)) f *= 2;
  return f;
}

Image read_overview(ImageReader& reader, int factor, const std::function<void(double)>& progress,
                    const std::atomic<bool>* cancel) {
  const ImageInfo& info = reader.info();
  if (factor < 1) throw Error(ErrorKind::InvalidArgument, "overview factor must be at least 1");
  const int ow = (info.width + factor - 1) / factor, oh = (info.height + factor - 1) / factor;
  const Format format = info.format;
  const int ch = format.channels;
  Image out(ow, oh, format);
  const int band_rows = std::max(factor, kBandRows / factor * factor);
  Image band(info.width, std::min(band_rows, info.height), format);
  std::vector<double> sums(static_cast<std::size_t>(ow) * ch), counts(static_cast<std::size_t>(ow));
  for (int y0 = 0; y0 < info.height; y0 += band_rows) {
    check_cancel(cancel);
    ImageView rows = band.view();
    rows.height = std::min(band_rows, info.height - y0);
    reader.read_rows(y0, rows);
    for (int r = 0; r < rows.height; r += factor) {
      const int n = std::min(factor, rows.height - r);
      std::fill(sums.begin(), sums.end(), 0.0);
      for (int x = 0; x < ow; ++x) counts[x] = static_cast<double>(n) * std::min(factor, info.width - x * factor);
      ImageView part = rows;
      part.data = rows.row(r);
      part.height = n;
      void* dst = out.view().row((y0 + r) / factor);
      switch (format.type) {
        case PixelType::U8:
          accumulate<std::uint8_t>(part, ch, factor, sums);
          store(sums, counts, ch, static_cast<std::uint8_t*>(dst));
          break;
        case PixelType::U16:
          accumulate<std::uint16_t>(part, ch, factor, sums);
          store(sums, counts, ch, static_cast<std::uint16_t*>(dst));
          break;
        case PixelType::F32:
          accumulate<float>(part, ch, factor, sums);
          store(sums, counts, ch, static_cast<float*>(dst));
          break;
      }
    }
    if (progress) progress(static_cast<double>(y0 + rows.height) / info.height);
  }
  return out;
}

Image read_region(ImageReader& reader, const Rect& region) {
  const ImageInfo& info = reader.info();
  if (region.x < 0 || region.y < 0 || region.width <= 0 || region.height <= 0 || region.right() > info.width ||
      region.bottom() > info.height)
    throw Error(ErrorKind::InvalidArgument, "region outside the image");
  Image out(region.width, region.height, info.format);
  const std::size_t px = info.format.pixel_bytes();
  const int band_rows = std::min(kBandRows, region.bottom());
  Image band(info.width, band_rows, info.format);
  // Sequential readers read from the top; the others start at the region.
  for (int y0 = info.access == RowAccess::Sequential ? 0 : region.y; y0 < region.bottom(); y0 += band_rows) {
    ImageView rows = band.view();
    rows.height = std::min(band_rows, region.bottom() - y0);
    reader.read_rows(y0, rows);
    for (int r = 0; r < rows.height; ++r) {
      const int y = y0 + r;
      if (y < region.y) continue;
      std::memcpy(out.view().row(y - region.y), rows.row(r) + region.x * px,
                  static_cast<std::size_t>(region.width) * px);
    }
  }
  return out;
}

}  // namespace tf
