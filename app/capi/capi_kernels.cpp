// Chains as descriptions (tf_chain_new_stages, tf_chain_stage): kernels given by their values, and
// every stage handed back as the values it applies, so that a binding can copy a chain into another
// process (Python's pickle) without the kernel files it was read from; and the border names a binding
// checks its arguments against (tf_border_names).
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "capi_internal.hpp"

namespace {

using namespace tf;
using namespace tf::capi;

thread_local std::vector<double> t_taps;  // tf_chain_stage's taps, until the thread's next call

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(ErrorKind::InvalidArgument, message);
}

std::vector<float> floats(const double* taps, int count) {
  std::vector<float> out(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) out[i] = static_cast<float>(taps[i]);
  return out;
}

// A stage of kernel values, held to the limits of kernel files (filter.hpp).
Stage values_stage(const tf_stage& s) {
  require(s.taps != nullptr, "kernel: no taps given");
  require(s.width > 0 && s.height > 0,
          fmt::format("kernel: {}x{} taps: both sides must be positive", s.width, s.height));
  const bool one_line = s.separable || s.width == 1 || s.height == 1;
  const int most = one_line ? kMaxSeparableTaps : kMaxKernelSide;
  if (s.width > most || s.height > most)
    throw Error(ErrorKind::Limit, fmt::format("kernel: {}x{} taps, larger than the limits of {}x{} (2-D) and {} taps "
                                              "a side (one row, one column or a separable pair)",
                                              s.width, s.height, kMaxKernelSide, kMaxKernelSide, kMaxSeparableTaps));
  for (long long i = 0, n = s.separable ? s.width + s.height : 1LL * s.width * s.height; i < n; ++i)
    require(std::isfinite(s.taps[i]), fmt::format("kernel: tap {} is {}", i, s.taps[i]));
  if (!s.separable) {
    Kernel k;
    k.width = s.width;
    k.height = s.height;
    k.anchor_x = s.width / 2;
    k.anchor_y = s.height / 2;
    k.taps = floats(s.taps, s.width * s.height);  // as Kernel::from_rows rounds a file's numbers
    return kernel_stage(std::move(k), s.normalize != 0, fmt::format("kernel({}x{})", s.width, s.height), "kernel");
  }
  std::vector<float> row = floats(s.taps, s.width), col = floats(s.taps + s.width, s.height);
  if (s.normalize) {  // each factor by its own sum, so that the 2-D kernel sums to 1
    normalize_taps(row, "kernel row");
    normalize_taps(col, "kernel column");
  }
  Stage stage;
  stage.name = fmt::format("kernel({}+{})", s.width, s.height);
  stage.convs.push_back(make_separable(std::move(row), std::move(col)));
  return stage;
}

}  // namespace

extern "C" {

tf_status tf_chain_new_stages(const tf_stage* stages, int count, const char* border, double border_value,
                              tf_chain** out) {
  return guarded([&] {
    require(out != nullptr, "tf_chain_new_stages: no place for the chain");
    *out = nullptr;
    require(count > 0 && stages, "give at least one filter spec or kernel");
    require(static_cast<std::size_t>(count) <= kMaxChainLength,
            fmt::format("a chain of {} filters is longer than the limit of {}", count, kMaxChainLength));
    auto c = std::make_unique<tf_chain>();
    for (int i = 0; i < count; ++i) {
      const tf_stage& s = stages[i];
      c->chain.push_back(s.spec ? parse_filter_spec(s.spec) : values_stage(s));
      c->specs.push_back(s.spec ? std::string(s.spec) : c->chain.back().name);
      c->given.push_back(s.spec        ? tf_chain::Given::Spec
                         : s.separable ? tf_chain::Given::SeparablePair
                                       : tf_chain::Given::Kernel2D);
    }
    check_chain_halo(c->chain);
    if (border) {
      const auto mode = parse_border_mode(border);
      require(mode.has_value(), fmt::format("border '{}' is not one of {}", border, border_mode_names()));
      c->border = {*mode, static_cast<float>(border_value)};
    }
    c->border_name = to_string(c->border.mode);
    *out = c.release();
  });
}

tf_status tf_chain_stage(const tf_chain* chain, int index, tf_stage* out, const char** kernel_file) {
  return guarded([&] {
    require(chain && out, "tf_chain_stage: no chain or no place for the stage");
    require(index >= 0 && index < static_cast<int>(chain->chain.size()),
            fmt::format("tf_chain_stage: stage {} of a chain of {}", index, chain->chain.size()));
    const Stage& stage = chain->chain[index];
    const auto given = index < static_cast<int>(chain->given.size()) ? chain->given[index] : tf_chain::Given::Spec;
    *out = tf_stage{};
    if (kernel_file) *kernel_file = stage.kernel_file.empty() ? nullptr : stage.kernel_file.c_str();
    if (given == tf_chain::Given::Spec && stage.kernel_file.empty()) {
      out->spec = chain->specs[index].c_str();
      return;
    }
    const Convolution& conv = stage.convs.front();
    const bool separable = given == tf_chain::Given::SeparablePair;
    if (separable) {
      t_taps.assign(conv.row.begin(), conv.row.end());
      t_taps.insert(t_taps.end(), conv.col.begin(), conv.col.end());
    } else {
      t_taps.assign(conv.kernel.taps.begin(), conv.kernel.taps.end());
    }
    out->taps = t_taps.data();
    out->width = conv.kernel.width;
    out->height = conv.kernel.height;
    out->separable = separable ? 1 : 0;
  });
}

const char* tf_border_names(void) {
  static const std::string names = border_mode_names();
  return names.c_str();
}

}  // extern "C"
