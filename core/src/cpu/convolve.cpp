// CPU convolution: the reference arithmetic, written so the compiler vectorizes it. Every inner
// loop runs over one row of interleaved samples with a single tap, so the order of taps per output
// is fixed (and equal to the CUDA kernels') whatever the vector width.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "tilefilter/cpu.hpp"
#include "tilefilter/error.hpp"

// std::fma is only fast with hardware FMA: build an x86-64-v3 clone next to a portable one.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define TF_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TF_MULTIVERSION
#endif

namespace tf::cpu {

namespace {

TF_MULTIVERSION void fma_row(float* __restrict acc, const float* __restrict src, float tap, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) acc[i] = std::fma(src[i], tap, acc[i]);
}

TF_MULTIVERSION void magnitude_row(float* __restrict out, const float* __restrict a, const float* __restrict b,
                                   std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = std::sqrt(std::fma(a[i], a[i], b[i] * b[i]));
}

template <class T>
void quantize_row(float* __restrict p, std::size_t n, float hi) {
  for (std::size_t i = 0; i < n; ++i) p[i] = std::min(std::max(std::rint(p[i]), 0.0f), hi);
}

Rect shrink(const Rect& r, const Halo& h) {
  return {r.x + h.left, r.y + h.top, r.width - h.left - h.right, r.height - h.top - h.bottom};
}

template <class T>
void load_row(const T* src, const std::vector<int>& xmap, int channels, float fill, float* out) {
  for (std::size_t x = 0; x < xmap.size(); ++x) {
    const int sx = xmap[x];
    for (int c = 0; c < channels; ++c)
      out[x * channels + c] = sx < 0 ? fill : static_cast<float>(src[static_cast<std::size_t>(sx) * channels + c]);
  }
}

// One convolution over `in`, written into `out` (out.rect = in.rect shrunk by `stage_halo`).
void convolve(const Convolution& conv, const Halo& stage_halo, const Plane& in, Plane& out, std::vector<float>& tmp) {
  const int C = in.channels;
  const Halo h = conv.halo();
  const int dx = stage_halo.left - h.left, dy = stage_halo.top - h.top;
  const int ow = out.rect.width, oh = out.rect.height;
  const std::size_t n = static_cast<std::size_t>(ow) * C;
  const Kernel& k = conv.kernel;
  if (conv.separable) {
    // Row pass over the rows the column pass needs, into a float32 intermediate.
    const int rows = oh + k.height - 1;
    tmp.assign(static_cast<std::size_t>(rows) * n, 0.0f);
    for (int r = 0; r < rows; ++r) {
      const float* src = in.row(dy + r) + static_cast<std::size_t>(dx) * C;
      float* acc = tmp.data() + static_cast<std::size_t>(r) * n;
      for (int kx = 0; kx < k.width; ++kx) fma_row(acc, src + static_cast<std::size_t>(kx) * C, conv.row[kx], n);
    }
    for (int y = 0; y < oh; ++y) {
      float* acc = out.row(y);
      std::fill(acc, acc + n, 0.0f);
      for (int ky = 0; ky < k.height; ++ky) fma_row(acc, tmp.data() + static_cast<std::size_t>(y + ky) * n, conv.col[ky], n);
    }
  } else {
    for (int y = 0; y < oh; ++y) {
      float* acc = out.row(y);
      std::fill(acc, acc + n, 0.0f);
      for (int ky = 0; ky < k.height; ++ky) {
        const float* src = in.row(y + dy + ky) + static_cast<std::size_t>(dx) * C;
        for (int kx = 0; kx < k.width; ++kx) fma_row(acc, src + static_cast<std::size_t>(kx) * C, k.at(kx, ky), n);
      }
    }
  }
}

}  // namespace

float quantized_border_value(const Border& border, PixelType type) {
  switch (type) {
    case PixelType::U8: return std::min(std::max(std::rint(border.value), 0.0f), 255.0f);
    case PixelType::U16: return std::min(std::max(std::rint(border.value), 0.0f), 65535.0f);
    case PixelType::F32: return border.value;
  }
  return border.value;
}

void load_padded(const ImageView& src, const Rect& rect, const Border& border, Plane& out) {
  const int C = src.format.channels;
  out.reset(rect, C);
  std::vector<int> xmap(rect.width);
  for (int x = 0; x < rect.width; ++x) xmap[x] = border_index(rect.x + x, src.width, border.mode);
  const float fill = quantized_border_value(border, src.format.type);
  for (int y = 0; y < rect.height; ++y) {
    float* dst = out.row(y);
    const int sy = border_index(rect.y + y, src.height, border.mode);
    if (sy < 0) {
      std::fill(dst, dst + out.stride(), fill);
      continue;
    }
    switch (src.format.type) {
      case PixelType::U8: load_row(src.row_as<std::uint8_t>(sy), xmap, C, fill, dst); break;
      case PixelType::U16: load_row(src.row_as<std::uint16_t>(sy), xmap, C, fill, dst); break;
      case PixelType::F32: load_row(src.row_as<float>(sy), xmap, C, fill, dst); break;
    }
  }
}

void apply_stage(const Stage& stage, const Plane& in, Plane& out) {
  thread_local std::vector<float> tmp;
  thread_local Plane second;
  const Halo h = stage.halo();
  out.reset(shrink(in.rect, h), in.channels);
  convolve(stage.convs[0], h, in, out, tmp);
  if (stage.combine == Combine::Magnitude) {
    second.reset(out.rect, in.channels);
    convolve(stage.convs[1], h, in, second, tmp);
    for (int y = 0; y < out.rect.height; ++y) magnitude_row(out.row(y), out.row(y), second.row(y), out.stride());
  }
}

void quantize(Plane& p, PixelType type) {
  if (type == PixelType::F32) return;
  const float hi = type == PixelType::U8 ? 255.0f : 65535.0f;
  quantize_row<float>(p.data.data(), p.data.size(), hi);
}

void resynthesize_border(Plane& p, int image_width, int image_height, const Border& border) {
  const int C = p.channels;
  const float fill = border.value;  // already quantized by the caller
  auto inside = [](int m, int lo, int len) { return m >= lo && m < lo + len; };
  // Columns of rows inside the image first, then whole rows outside it (their sources are fixed rows).
  for (int y = 0; y < p.rect.height; ++y) {
    const int iy = p.rect.y + y;
    if (iy < 0 || iy >= image_height) continue;
    float* row = p.row(y);
    for (int x = 0; x < p.rect.width; ++x) {
      const int ix = p.rect.x + x;
      if (ix >= 0 && ix < image_width) continue;
      const int m = border_index(ix, image_width, border.mode);
      if (m < 0) {
        std::fill(row + static_cast<std::size_t>(x) * C, row + static_cast<std::size_t>(x + 1) * C, fill);
      } else {
        if (!inside(m, p.rect.x, p.rect.width)) throw Error(ErrorKind::Internal, "border source outside the tile");
        std::memcpy(row + static_cast<std::size_t>(x) * C, row + static_cast<std::size_t>(m - p.rect.x) * C, C * sizeof(float));
      }
    }
  }
  for (int y = 0; y < p.rect.height; ++y) {
    const int iy = p.rect.y + y;
    if (iy >= 0 && iy < image_height) continue;
    const int m = border_index(iy, image_height, border.mode);
    float* row = p.row(y);
    if (m < 0) {
      std::fill(row, row + p.stride(), fill);
    } else {
      if (!inside(m, p.rect.y, p.rect.height)) throw Error(ErrorKind::Internal, "border source outside the tile");
      std::memcpy(row, p.row(m - p.rect.y), p.stride() * sizeof(float));
    }
  }
}

void store(const Plane& p, const ImageView& dst) {
  for (int y = 0; y < p.rect.height; ++y) {
    const float* src = p.row(y);
    const std::size_t n = p.stride();
    const int dy = p.rect.y + y;
    const std::size_t x0 = static_cast<std::size_t>(p.rect.x) * p.channels;
    switch (dst.format.type) {
      case PixelType::U8: {
        auto* d = dst.row_as<std::uint8_t>(dy) + x0;
        for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<std::uint8_t>(src[i]);
        break;
      }
      case PixelType::U16: {
        auto* d = dst.row_as<std::uint16_t>(dy) + x0;
        for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<std::uint16_t>(src[i]);
        break;
      }
      case PixelType::F32: std::memcpy(dst.row_as<float>(dy) + x0, src, n * sizeof(float)); break;
    }
  }
}

bool chain_fits_tile(const Chain& chain, const Tile& tile, int image_width, int image_height, BorderMode mode) {
  if (chain.size() <= 1 || mode == BorderMode::Constant) return true;
  auto axis_fits = [mode](int lo, int len, int n) {
    for (int p = lo; p < lo + len; ++p) {
      if (p >= 0 && p < n) continue;
      const int m = border_index(p, n, mode);
      if (m >= 0 && (m < lo || m >= lo + len)) return false;
    }
    return true;
  };
  Rect r = tile.in;
  for (std::size_t s = 0; s + 1 < chain.size(); ++s) {
    r = shrink(r, chain[s].halo());
    if (!axis_fits(r.x, r.width, image_width) || !axis_fits(r.y, r.height, image_height)) return false;
  }
  return true;
}

void filter_tile(const TileJob& job, const Tile& tile) {
  thread_local Plane a, b;
  const PixelType type = job.src.format.type;
  Border border = job.border;
  border.value = quantized_border_value(border, type);
  load_padded(job.src, tile.in, border, a);
  const Chain& chain = *job.chain;
  for (std::size_t s = 0; s < chain.size(); ++s) {
    apply_stage(chain[s], a, b);
    quantize(b, type);
    if (s + 1 < chain.size()) resynthesize_border(b, job.src.width, job.src.height, border);
    std::swap(a, b);
  }
  store(a, job.dst);
}

}  // namespace tf::cpu
