// The CPU backend's vector loops (Highway, core/src/engine/cpu/simd_rows.cpp) are taken on this machine when
// the build has Highway and the CPU an FMA target, and give the scalar loops' bits exactly: widths
// of 1, 7, 61 and 257 columns (every vector tail), every pixel type, 1, 3 and 4 channels, separable
// (3 to 13 taps: every row pass with shared loads, and 31), 2-D and combined stages, chains, and the
// kernel that streams from the source.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "test_support.hpp"
#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/engine/scheduler.hpp"

namespace tf {
namespace {

// Restores the default (vector loops allowed) whatever the test does.
struct ScalarGuard {
  ~ScalarGuard() { cpu::set_simd_enabled(true); }
};

Image filtered(const Image& src, const Chain& chain, bool simd) {
  cpu::set_simd_enabled(simd);
  Image dst(src.width(), src.height(), src.format());
  JobOptions opt;
  opt.border = Border{BorderMode::Reflect101, 0.0f};
  run_filter(src.view(), dst.view(), chain, select_devices("cpu:1").devices, opt);
  return dst;
}

TEST(CpuSimd, TakenWhereTheBuildAndCpuAllow) {
  const std::string target = cpu::simd_target();
  std::printf("[cpu] vector target: %s\n", target.c_str());
#if TF_HAVE_HWY && defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_NE(target, "scalar") << "Highway is built in and this CPU has AVX2+FMA";
  }
#endif
  const ScalarGuard guard;
  cpu::set_simd_enabled(false);
  EXPECT_EQ(cpu::simd_target(), "scalar");
}

TEST(CpuSimd, EqualsScalarBitwiseOnEveryTail) {
  const ScalarGuard guard;
  const std::vector<std::vector<std::string>> chains = {
      {"gaussian:sigma=1.5"},                                      // separable, 9 taps, from the source
      {"gaussian:sigma=5,radius=15"},                              // separable, 31 taps
      {"gaussian:sigma=2,radius=5", "gaussian:sigma=2,radius=6"},  // 11 and 13 taps (shared row loads)
      {"sharpen:amount=0.7"},                                      // 2-D 3x3
      {"sobel"},                                                   // magnitude of two convolutions
      {"unsharp:sigma=2,amount=1.5"},                              // a 2-D kernel
      {"box:radius=2", "sharpen:amount=1"}};                       // a chain (later stages from padded planes)
  const PixelType types[] = {PixelType::U8, PixelType::U16, PixelType::F32};
  const std::uint32_t seed = test::test_seed(14);
  for (const int width : {1, 7, 61, 257})
    for (const PixelType type : types)
      for (const int channels : {1, 3, 4})
        for (const auto& specs : chains) {
          const Format format{type, channels};
          SCOPED_TRACE(fmt::format("{} wide, {}, {}", width, test::describe(format), fmt::join(specs, " | ")));
          const Image src = test::random_image(width, 11, format, seed + width);
          const Chain chain = parse_chain(specs);
          const Image vector = filtered(src, chain, true), scalar = filtered(src, chain, false);
          const test::Difference d = test::compare(vector.view(), scalar.view());
          ASSERT_EQ(d.max_abs, 0.0) << "first difference at " << d.x << "," << d.y << " channel " << d.c;
          for (int y = 0; y < src.height(); ++y)  // bits, not values: -0.0f and 0.0f differ here
            ASSERT_EQ(std::memcmp(vector.view().row(y), scalar.view().row(y), vector.view().row_bytes()), 0) << y;
        }
}

}  // namespace
}  // namespace tf
