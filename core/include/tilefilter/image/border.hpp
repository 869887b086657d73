// Border modes (OpenCV's meanings) and the one function that maps an outside coordinate inside.
// docs/design.md, contract 1: borders are synthesized once, when a tile's input is prepared; kernels never see edges.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace tf {

enum class BorderMode { Reflect101, Reflect, Replicate, Constant, Wrap };

struct Border {
  BorderMode mode = BorderMode::Reflect101;
  float value = 0.0f;  // for Constant, in pixel units (0..255 for u8, 0..65535 for u16)
};

std::string to_string(BorderMode m);
std::optional<BorderMode> parse_border_mode(std::string_view name);
const char* border_mode_names();  // "reflect101|reflect|replicate|constant|wrap"

// Maps coordinate p into [0, n); -1 means "use the constant value". Works for any p, also when the
// image is smaller than the halo (reflections repeat). Same rules as OpenCV's borderInterpolate.
inline int border_index(int p, int n, BorderMode mode) {
  if (p >= 0 && p < n) return p;
  switch (mode) {
    case BorderMode::Constant: return -1;
    case BorderMode::Replicate: return p < 0 ? 0 : n - 1;
    case BorderMode::Wrap: {
      int r = p % n;
      return r < 0 ? r + n : r;
    }
    case BorderMode::Reflect:
    case BorderMode::Reflect101: {
      if (n == 1) return 0;
      const int delta = mode == BorderMode::Reflect101 ? 1 : 0;
      do {
        if (p < 0) p = -p - 1 + delta;
        else p = n - 1 - (p - n) - delta;
      } while (p < 0 || p >= n);
      return p;
    }
  }
  return -1;
}

}  // namespace tf
