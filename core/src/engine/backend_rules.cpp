#include "tilefilter/engine/backend_rules.hpp"

#include <algorithm>
#include <cmath>

namespace tf {

float quantized_border_value(const Border& border, PixelType type) {
  switch (type) {
    case PixelType::U8: return std::min(std::max(std::rint(border.value), 0.0f), 255.0f);
    case PixelType::U16: return std::min(std::max(std::rint(border.value), 0.0f), 65535.0f);
    case PixelType::F32: return border.value;
  }
  return border.value;
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

int fft_fast_size(int n) {
  for (;; ++n) {
    int m = n;
    for (int p : {2, 3, 5, 7})
      while (m % p == 0) m /= p;
    if (m == 1) return n;
  }
}

bool fft_available() {
#ifdef TF_HAVE_FFTW
  return true;
#else
  return false;
#endif
}

bool uses_fft(const Convolution& conv) {
  return fft_available() && !conv.separable && !conv.box_sum &&
         static_cast<long long>(conv.kernel.width) * conv.kernel.height >= kFftMinTaps;
}

bool stage_uses_fft(const Stage& stage) {
  return stage.combine == Combine::Single && stage.convs.size() == 1 && uses_fft(stage.convs[0]);
}

bool chain_uses_fft(const TileJob& job) {
  return !job.exact && std::any_of(job.chain->begin(), job.chain->end(), stage_uses_fft);
}

}  // namespace tf
