// Filters as data. A FilterSpec ("gaussian:sigma=2") is parsed into a Stage: one or two
// convolutions (each a general 2-D kernel or a separable pair) and how their results combine.
// A chain is a list of stages applied in order. Each stage declares its footprint (halo); the
// tiler alone turns footprints into tiles (docs/design.md, contract 3).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tf {

struct Halo {
  int left = 0, top = 0, right = 0, bottom = 0;
  Halo operator+(const Halo& o) const { return {left + o.left, top + o.top, right + o.right, bottom + o.bottom}; }
  bool operator==(const Halo&) const = default;
};

// A correlation kernel, row-major, applied like OpenCV's filter2D: out(x,y) = sum k(i,j) * in(x+i-ax, y+j-ay).
struct Kernel {
  int width = 0, height = 0;
  int anchor_x = 0, anchor_y = 0;  // default (width/2, height/2), OpenCV's anchor (-1,-1)
  std::vector<float> taps;         // height rows of width taps

  static Kernel from_rows(const std::vector<std::vector<double>>& rows);
  float at(int x, int y) const { return taps[static_cast<std::size_t>(y) * width + x]; }
  Halo halo() const { return {anchor_x, anchor_y, width - 1 - anchor_x, height - 1 - anchor_y}; }
};

// One convolution as it is executed. Separable: a row pass with `row` (width taps) into a float32
// intermediate, then a column pass with `col` (height taps). Otherwise `kernel` as a general 2-D pass.
struct Convolution {
  bool separable = false;
  // The full 2-D kernel: size and anchor always; taps always for 2-D convolutions, and for separable
  // ones up to kMaxKernelTaps taps (larger separable kernels leave them empty: use row and col).
  Kernel kernel;
  std::vector<float> row, col;  // separable factors, kernel ~= col * row^T
  // A box mean (row and col all 1/n) wide enough for running sums: on integer samples it is the
  // exact integer window sum S, stored as float(double(S) / (kernel.width * kernel.height))
  // (docs/design.md, contract 2), O(1) a pixel; float samples take the separable FMAs.
  bool box_sum = false;
  Halo halo() const { return kernel.halo(); }
};
// Box blurs wider than this radius are box_sum convolutions (up to it: separable FMAs, as always).
constexpr int kBoxSumMinRadius = 128;

// Tries to factor a kernel as col * row^T (rank 1). Returns true and fills row/col when the
// reconstruction matches every tap to within a relative 1e-6 of the largest tap.
bool factor_separable(const Kernel& k, std::vector<float>& row, std::vector<float>& col);
Convolution make_convolution(const Kernel& k);  // detects separability
Convolution make_separable(std::vector<float> row, std::vector<float> col);

// Magnitude: sqrt(a*a + b*b) of two convolutions; Sum: a + b (one float32 add, a the first convolution's result).
enum class Combine { Single, Magnitude, Sum };

struct Stage {
  std::string name;                // the spec it came from, e.g. "gaussian:sigma=2"
  std::vector<Convolution> convs;  // 1, or 2 for Magnitude
  Combine combine = Combine::Single;
  std::string kernel_file;  // custom: the kernel file it was read from
  Halo halo() const;        // union of the convolutions' footprints
};

using Chain = std::vector<Stage>;
Halo chain_halo(const Chain& chain);
// Throws tf::Error (Limit) when the chain's summed halo passes kMaxChainHalo on any side.
void check_chain_halo(const Chain& chain);

// Parameter description, used by `tilefilter filters`, the parser and the GUI's generated widgets.
struct ParamInfo {
  std::string name;
  enum class Kind { Number, Integer, Choice, Bool, Path } kind = Kind::Number;
  double min = 0, max = 0, default_value = 0;  // Number/Integer/Bool
  std::vector<std::string> choices;            // Choice
  std::string default_text;                    // Choice/Path default ("" = required for Path)
  std::string help;
};
struct FilterInfo {
  std::string name;
  std::string summary;
  std::vector<ParamInfo> params;
};
const std::vector<FilterInfo>& filter_catalog();

struct Limits;  // codec.hpp

// "name" or "name:key=value,key=value". Throws tf::Error naming the spec and the reason.
Stage parse_filter_spec(std::string_view spec);
// A spec's "key=value,..." part (`rest`, after the colon of `spec`) as (key, value) pairs in order. A
// value in double quotes may hold commas; inside it \" and \\ stand for " and \ (custom:file="a,b.txt").
std::vector<std::pair<std::string, std::string>> split_spec_params(std::string_view spec, std::string_view rest);
// `value` as a spec writes it: as it is, or quoted when it holds a comma or starts with a quote.
std::string spec_value(std::string_view value);
// A stage that applies kernel `k` (custom:file=..., or taps given as values), its taps divided by their
// sum first when `normalize` (normalize_taps).
Stage kernel_stage(Kernel k, bool normalize, const std::string& name, const std::string& origin);
// Divides `taps` by their sum (in double, each rounded to float once); a sum of 0 throws, naming `origin`.
void normalize_taps(std::vector<float>& taps, const std::string& origin);
Chain parse_chain(const std::vector<std::string>& specs);

// Kernel text files: rows of numbers separated by spaces or commas, '#' starts a comment.
Kernel parse_kernel_text(std::string_view text, const std::string& origin);
Kernel load_kernel_file(const std::string& path);
// Limits (each past-the-limit request fails with a tf::Error naming it): a general 2-D kernel up to
// kMaxKernelSide per side; one axis of a separable kernel (a one-row or one-column kernel file, the
// presets' taps) up to kMaxSeparableTaps; a chain's summed halo up to kMaxChainHalo on every side.
constexpr int kMaxKernelSide = 1023;
constexpr int kMaxSeparableTaps = 4095;
constexpr std::size_t kMaxKernelTaps = static_cast<std::size_t>(kMaxKernelSide) * kMaxKernelSide;
constexpr int kMaxChainHalo = 8191;
constexpr std::size_t kMaxChainLength = 32;
// The largest radius a preset takes (2R+1 = kMaxSeparableTaps taps) and the largest sigma (ceil(3 sigma) <= it).
constexpr int kMaxPresetRadius = (kMaxSeparableTaps - 1) / 2;
constexpr double kMaxPresetSigma = 680;

// Gaussian taps exactly as OpenCV's getGaussianKernel(2R+1, sigma) for sigma > 0 (double, normalized).
std::vector<float> gaussian_taps(double sigma, int radius);

}  // namespace tf
