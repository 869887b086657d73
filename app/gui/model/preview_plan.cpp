#include "preview_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tilefilter/engine/backend_rules.hpp"
#include "tilefilter/engine/startup.hpp"

namespace tf::gui {

namespace {

Rect clip(const Rect& r, int width, int height) {
  const int x0 = std::clamp(r.x, 0, width), y0 = std::clamp(r.y, 0, height);
  const int x1 = std::clamp(r.right(), 0, width), y1 = std::clamp(r.bottom(), 0, height);
  return {x0, y0, std::max(0, x1 - x0), std::max(0, y1 - y0)};
}

// A region worth computing first: clearly smaller than the image it is cut from.
bool worth_a_first_pass(const Rect& visible, long long whole) {
  return visible.area() > 0 && visible.area() * 2 < whole;
}

}  // namespace

Image crop(const Image& src, const Rect& r) {
  Image out(r.width, r.height, src.format());
  const ImageView in = src.view().sub(r);
  for (int y = 0; y < r.height; ++y) std::memcpy(out.view().row(y), in.row(y), in.row_bytes());
  return out;
}

Rect grow_clipped(const Rect& v, const Halo& h, int width, int height) {
  return clip({v.x - h.left, v.y - h.top, v.width + h.left + h.right, v.height + h.top + h.bottom}, width, height);
}

Rect rect_at_level(const Rect& r, int level, int level_width, int level_height) {
  const int f = 1 << level;
  const int x0 = r.x / f, y0 = r.y / f;
  const int x1 = (r.right() + f - 1) / f, y1 = (r.bottom() + f - 1) / f;
  return clip({x0, y0, x1 - x0, y1 - y0}, level_width, level_height);
}

std::vector<PreviewStep> plan_preview(const PreviewView& v) {
  std::vector<PreviewStep> steps;
  const long long whole = static_cast<long long>(v.image_width) * v.image_height;
  const Rect visible = clip(v.visible, v.image_width, v.image_height);
  if (whole > kSmallPreviewPixels && visible.area() > 0) {
    const double factor = v.scale > 0 ? 1.0 / v.scale : 1.0;
    int level = 0;
    if (factor >= 2) level = std::min(static_cast<int>(std::floor(std::log2(factor) + 1e-9)), v.pyramid_levels - 1);
    if (level > 0) {
      const int f = 1 << level;
      const int lw = (v.image_width + f - 1) / f, lh = (v.image_height + f - 1) / f;
      steps.push_back({PreviewPass::Proxy, level, rect_at_level(visible, level, lw, lh)});
    } else if (worth_a_first_pass(visible, whole) && v.border != BorderMode::Wrap) {
      // Wrap borders take pixels from the opposite edge, which a region does not hold.
      steps.push_back({PreviewPass::Region, 0, visible});
    }
  }
  steps.push_back({PreviewPass::Full, 0, {0, 0, v.image_width, v.image_height}});
  return steps;
}

bool first_pass_on_cpu(const Chain& chain, long long pixels, int channels, bool with_gpu, int cores) {
  if (!with_gpu || pixels <= 0 || std::any_of(chain.begin(), chain.end(), stage_uses_fft)) return false;
  WorkEstimate work;
  work.pixels = static_cast<double>(pixels);
  work.channels = channels;
  work.fmas = chain_fmas_per_pixel(chain);
  return choose_cpu_for_small_work(work, cores, 1).cpu_s <= kCpuFirstPassSeconds;
}

std::vector<FilterEntry> scaled_for_proxy(const std::vector<FilterEntry>& chain, int factor) {
  if (factor <= 1) return chain;
  std::vector<FilterEntry> out = chain;
  for (auto& e : out) {
    const FilterInfo* info = find_filter(e.filter);
    if (!info) continue;
    for (const auto& p : info->params) {
      if (p.name != "sigma" && p.name != "radius") continue;
      auto it = e.numbers.find(p.name);
      if (it == e.numbers.end()) continue;
      double v = it->second / factor;
      if (p.kind == ParamInfo::Kind::Integer) {
        if (it->second == 0) continue;  // 0 = automatic from sigma
        v = std::max(1.0, std::round(v));
      }
      it->second = std::clamp(v, p.min, p.max);
    }
  }
  return out;
}

}  // namespace tf::gui
