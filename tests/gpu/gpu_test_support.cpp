#include "gpu_test_support.hpp"

#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "tilefilter/cuda_backend.hpp"

namespace tf::gputest {

namespace {
struct Found {
  std::vector<DevicePtr> gpus;
  std::string reason;
};
const Found& found() {
  static const Found f = [] {
    cuda::install_backend();
    GpuDiscovery d = discover_gpus();
    return Found{std::move(d.gpus), d.message.empty() ? "CUDA found no usable GPU" : d.message};
  }();
  return f;
}
}  // namespace

const std::vector<DevicePtr>& gpus() { return found().gpus; }
const std::string& no_gpu_reason() { return found().reason; }

std::vector<DevicePtr> first_gpus(std::size_t n) {
  const auto& all = gpus();
  return {all.begin(), all.begin() + std::min(n, all.size())};
}

Image pinned_copy(const Image& src) {
  const PixelAllocator* pinned = cuda::pinned_allocator();
  if (!pinned) throw std::runtime_error("no pinned allocator");
  Image copy(src.width(), src.height(), src.format(), *pinned);
  for (int y = 0; y < src.height(); ++y) std::memcpy(copy.view().row(y), src.view().row(y), src.view().row_bytes());
  return copy;
}

Image cpu_reference(const Image& src, const Chain& chain, const Border& border) {
  static const std::vector<DevicePtr> cpus = select_devices("cpu").devices;
  JobOptions o;
  o.border = border;
  o.exact = true;  // direct convolution, the bits GPUs match (not the CPU's FFT path for large 2-D kernels)
  return filter_image(src, chain, cpus, o);
}

Image run_on(const Image& src, const Chain& chain, const std::vector<DevicePtr>& devices, JobOptions options,
             JobReport* report) {
  return filter_image(src, chain, devices, options, report);
}

::testing::AssertionResult same_bits(const Image& expected, const Image& actual) {
  if (same_pixels(expected.view(), actual.view())) return ::testing::AssertionSuccess();
  const ImageView& a = expected.view();
  const ImageView& b = actual.view();
  const std::size_t row = a.row_bytes();
  const std::size_t sample = bytes_per_sample(a.format.type);
  for (int y = 0; y < a.height; ++y)
    for (std::size_t i = 0; i < row; i += sample)
      if (std::memcmp(a.row(y) + i, b.row(y) + i, sample) != 0) {
        const std::size_t s = i / sample;
        const int x = static_cast<int>(s / a.format.channels), c = static_cast<int>(s % a.format.channels);
        double va = 0, vb = 0;
        switch (a.format.type) {
          case PixelType::U8:
            va = a.row_as<std::uint8_t>(y)[s];
            vb = b.row_as<std::uint8_t>(y)[s];
            break;
          case PixelType::U16:
            va = a.row_as<std::uint16_t>(y)[s];
            vb = b.row_as<std::uint16_t>(y)[s];
            break;
          case PixelType::F32:
            va = a.row_as<float>(y)[s];
            vb = b.row_as<float>(y)[s];
            break;
        }
        return ::testing::AssertionFailure()
               << fmt::format("first difference at x={} y={} channel {}: CPU {} GPU {} (max |diff| {})", x, y, c, va,
                              vb, test::compare(a, b).max_abs);
      }
  return ::testing::AssertionFailure() << "pixels differ";
}

Stage kernel_stage(const std::string& name, const std::vector<std::vector<double>>& rows) {
  Stage s;
  s.name = name;
  s.convs.push_back(make_convolution(Kernel::from_rows(rows)));
  return s;
}

Stage random_kernel_stage(int w, int h, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<std::vector<double>> rows(h, std::vector<double>(w));
  for (auto& r : rows)
    for (auto& v : r) v = u(rng) / (w * h) * 4;
  return kernel_stage(fmt::format("random{}x{}", w, h), rows);
}

std::string config(const std::string& filter, BorderMode border, const Format& f, int w, int h) {
  return fmt::format("{} border={} {} {}x{}", filter, to_string(border), to_string(f), w, h);
}

}  // namespace tf::gputest
