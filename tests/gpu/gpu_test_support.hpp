// Helpers for the GPU suite: the GPUs (or a skip with CUDA's reason), the CPU gold reference, and a
// bitwise comparison that names the first differing sample.
#pragma once
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_support.hpp"
#include "tilefilter/engine/device.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/filters/filter.hpp"

namespace tf::gputest {

// Every GPU, discovered once per process and reused (their buffers persist between tests).
const std::vector<DevicePtr>& gpus();
const std::string& no_gpu_reason();
// The first `n` GPUs (fewer when the machine has fewer).
std::vector<DevicePtr> first_gpus(std::size_t n);

#define TF_REQUIRE_GPU()                                                                                     \
  do {                                                                                                       \
    if (::tf::gputest::gpus().empty()) GTEST_SKIP() << "no GPU visible: " << ::tf::gputest::no_gpu_reason(); \
  } while (0)

// A copy of `src` in pinned host memory (cuda::pinned_allocator()); throws when the backend has none.
Image pinned_copy(const Image& src);

// The CPU backend's output (the reference every backend must match bit for bit), on every core.
Image cpu_reference(const Image& src, const Chain& chain, const Border& border);

Image run_on(const Image& src, const Chain& chain, const std::vector<DevicePtr>& devices, JobOptions options,
             JobReport* report = nullptr);

// Byte equality of the pixels; on failure, the first differing sample and both values.
::testing::AssertionResult same_bits(const Image& expected, const Image& actual);

// A stage from kernel rows (separable when the kernel has rank 1, as custom kernels are).
Stage kernel_stage(const std::string& name, const std::vector<std::vector<double>>& rows);
// A random kernel of w x h taps in [-1, 1] (never separable).
Stage random_kernel_stage(int w, int h, unsigned seed);

std::string config(const std::string& filter, BorderMode border, const Format& f, int w, int h);

// What the bitwise suites sweep: every border mode, pixel type and channel count, and each mode's
// border (the constant one a value that is no integer, so each pixel type rounds it its own way).
inline constexpr BorderMode kEveryBorder[] = {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate,
                                              BorderMode::Constant, BorderMode::Wrap};
inline constexpr PixelType kEveryType[] = {PixelType::U8, PixelType::U16, PixelType::F32};
inline constexpr int kEveryChannelCount[] = {1, 3, 4};
inline Border sweep_border(BorderMode m) { return Border{m, m == BorderMode::Constant ? 77.6f : 0.0f}; }

}  // namespace tf::gputest
