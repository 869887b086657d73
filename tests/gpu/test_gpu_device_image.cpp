// Images already in GPU memory (cuda::filter_device_image, the path of tf_filter_device, CuPy and
// PyTorch): the rules that let the chain read and write the caller's memory where it lies (pure C++,
// run without a GPU), and on a GPU the CPU's bits in place and out of place, for every border, pixel
// type and channel count, odd sizes, pitches that are multiples of nothing, views whose start the
// kernels' 16-byte stores cannot take, and plans kept from call to call.
#ifdef TF_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstring>

#include "chain_runner.hpp"
#include "cuda/cuda_util.hpp"
#include "gpu_test_support.hpp"
#include "tile_plan.hpp"
#include "tilefilter/cuda_device_image.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::gputest {
namespace {

// The whole image as one tile, as filter_device_image plans it.
cuda::TilePlan whole_image_plan(const Chain& chain, int w, int h, BorderMode mode) {
  return cuda::plan_tile(chain, plan_tiles(w, h, chain_halo(chain), {w, h}).at(0), w, h, mode);
}

TEST(DeviceImageRules, WholeImagePlansIndexTheImageItself) {
  // One run of rows and of columns at the start of the compact buffer: the maps then index the
  // caller's image, which the first stage reads where it lies.
  for (const char* spec : {"gaussian:sigma=1.5", "box:radius=40", "unsharp:sigma=5"})
    for (BorderMode mode : kEveryBorder)
      for (auto [w, h] : {std::pair{1, 1}, std::pair{7, 3}, std::pair{301, 517}, std::pair{4097, 33}}) {
        const cuda::TilePlan p = whole_image_plan(parse_chain({spec}), w, h, mode);
        ASSERT_EQ(p.columns.size(), 1u) << spec << " " << to_string(mode) << " " << w << "x" << h;
        ASSERT_EQ(p.rows.size(), 1u) << spec << " " << to_string(mode) << " " << w << "x" << h;
        EXPECT_EQ(p.columns[0], (cuda::AxisRun{0, w, 0})) << spec << " " << to_string(mode);
        EXPECT_EQ(p.rows[0], (cuda::AxisRun{0, h, 0})) << spec << " " << to_string(mode);
      }
}

TEST(DeviceImageRules, AlignmentOfTheKernelsLoadsAndStores) {
  using cuda::read_alignment, cuda::write_alignment;
  EXPECT_EQ(read_alignment({PixelType::U8, 4}), 4u);
  EXPECT_EQ(read_alignment({PixelType::U16, 4}), 8u);
  EXPECT_EQ(read_alignment({PixelType::F32, 4}), 16u);
  EXPECT_EQ(read_alignment({PixelType::U8, 3}), 1u);
  EXPECT_EQ(read_alignment({PixelType::U16, 1}), 2u);
  EXPECT_EQ(read_alignment({PixelType::F32, 3}), 4u);
  for (PixelType t : kEveryType) EXPECT_EQ(write_alignment({t, 4}), 16u);
  EXPECT_EQ(write_alignment({PixelType::U8, 1}), 1u);
  EXPECT_EQ(write_alignment({PixelType::U16, 3}), 2u);
  EXPECT_EQ(write_alignment({PixelType::F32, 1}), 4u);
  alignas(16) unsigned char bytes[64] = {};
  EXPECT_TRUE(cuda::is_aligned(bytes, 48, 16));
  EXPECT_FALSE(cuda::is_aligned(bytes + 4, 48, 16));
  EXPECT_FALSE(cuda::is_aligned(bytes, 1204 + 4, 16));
  EXPECT_TRUE(cuda::is_aligned(bytes + 3, 903, 1));
}

TEST(DeviceImageRules, OutputMayAliasInputOnlyWithAnIntermediateBetween) {
  const int w = 8192, h = 8192;
  auto may_alias = [&](std::vector<std::string> specs, PixelType type) {
    const Chain chain = parse_chain(specs);
    return cuda::output_may_alias_input(chain, whole_image_plan(chain, w, h, BorderMode::Reflect101), {type, 4}, 132);
  };
  for (PixelType t : kEveryType) {
    // One fused launch reads the input around the pixels it writes.
    EXPECT_FALSE(may_alias({"gaussian:sigma=1.5"}, t));
    EXPECT_FALSE(may_alias({"sharpen"}, t));
    EXPECT_FALSE(may_alias({"unsharp:sigma=5"}, t));
    EXPECT_FALSE(may_alias({"sobel:dir=magnitude"}, t));
    // A stage buffer between the first read and the last write.
    EXPECT_TRUE(may_alias({"gaussian:sigma=1.5", "sharpen"}, t));
    EXPECT_TRUE(may_alias({"sharpen", "sharpen", "sharpen"}, t));
    // Two launches through an intermediate: box sums (integers), the wide separable path (float).
    EXPECT_TRUE(may_alias({"box:radius=130"}, t));
  }
}

TEST(DeviceImageRules, OnlyTheSourceItselfMayOverlapIt) {
  // Checked before any GPU is asked: host memory serves.
  Image img(16, 8, {PixelType::U8, 4});
  const ImageView v = img.view();
  const ImageView shifted{v.data + v.pitch, v.pitch, v.width, v.height - 1, v.format};
  const ImageView src{v.data, v.pitch, v.width, v.height - 1, v.format};
  const Chain chain = parse_chain({"gaussian:sigma=1.5"});
  try {
    cuda::filter_device_image(src, shifted, chain, {}, 0, nullptr);
    FAIL() << "an overlapping destination was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("overlaps the source"), std::string::npos) << e.what();
  }
  try {
    cuda::filter_device_image(src, src, chain, {}, 0, nullptr);
    FAIL() << "host memory was taken for device memory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(std::string(e.what()).find("overlaps"), std::string::npos) << e.what();
  }
}

// An image in device memory of `device`: rows `pitch` bytes apart from `offset` bytes into the buffer.
struct DeviceImage {
  DeviceImage(const Image& host, int device, std::size_t pitch, std::size_t offset) : device(device) {
    const ImageView h = host.view();
    cuda::ScopedDevice on(device);
    buffer.reserve(offset + pitch * static_cast<std::size_t>(h.height), device);
    view = {buffer.as<std::byte>() + offset, pitch, h.width, h.height, h.format};
    TF_CUDA_CHECK(cudaMemcpy2D(view.data, pitch, h.data, h.pitch, h.row_bytes(), h.height, cudaMemcpyHostToDevice));
    // A copy from pageable memory may return before it lands, on the legacy stream, which a
    // non-blocking stream does not wait for.
    TF_CUDA_CHECK(cudaDeviceSynchronize());
  }
  Image download() const {
    cuda::ScopedDevice on(device);
    TF_CUDA_CHECK(cudaDeviceSynchronize());
    Image out(view.width, view.height, view.format);
    const ImageView o = out.view();
    TF_CUDA_CHECK(
        cudaMemcpy2D(o.data, o.pitch, view.data, view.pitch, o.row_bytes(), o.height, cudaMemcpyDeviceToHost));
    return out;
  }
  int device;
  cuda::DeviceBuffer buffer;
  ImageView view;
};

// Out of place into another buffer, then in place, on `stream` of the first GPU: both give `want`.
void expect_bits(const Image& src, const Image& want, const Chain& chain, BorderMode mode, std::size_t pitch,
                 std::size_t offset, const std::string& what, cudaStream_t stream = nullptr) {
  const int device = gpus()[0]->info().ordinal;
  const std::vector<int> every_gpu = cuda::device_ordinals();  // in place runs on `device` alone
  DeviceImage in(src, device, pitch, offset);
  Image zeros(src.width(), src.height(), src.format());
  std::memset(zeros.view().data, 0, zeros.view().pitch * static_cast<std::size_t>(zeros.height()));
  DeviceImage out(zeros, device, pitch, offset);
  cuda::filter_device_image(in.view, out.view, chain, sweep_border(mode), device, stream, every_gpu);
  EXPECT_TRUE(same_bits(want, out.download())) << what << " out of place";
  cuda::filter_device_image(in.view, in.view, chain, sweep_border(mode), device, stream, every_gpu);
  EXPECT_TRUE(same_bits(want, in.download())) << what << " in place";
}

// The chains of the in-place rules: one fused separable launch (in place through an intermediate),
// one 2-D stage (likewise), two stages (straight into the source), box sums / the wide separable path
// (two launches: straight into the source).
const std::vector<std::vector<std::string>> kChains = {
    {"gaussian:sigma=1.5"}, {"sharpen"}, {"gaussian:sigma=1.5", "sharpen"}, {"box:radius=130"}};

class InPlace : public ::testing::TestWithParam<std::size_t> {};

TEST_P(InPlace, EqualsOutOfPlaceEqualsCpu) {
  TF_REQUIRE_GPU();
  const Chain chain = parse_chain(kChains[GetParam()]);
  const std::uint32_t seed = test::test_seed(4400 + static_cast<std::uint32_t>(GetParam()));
  SCOPED_TRACE(fmt::format("seed {}", seed));
  for (auto [w, h] : {std::pair{1, 1}, std::pair{7, 3}, std::pair{301, 517}, std::pair{4097, 33}})
    for (BorderMode mode : kEveryBorder)
      for (PixelType t : kEveryType)
        for (int c : kEveryChannelCount) {
          const Format f{t, c};
          const Image src = test::random_image(w, h, f, seed);
          const Image want = cpu_reference(src, chain, sweep_border(mode));
          const std::string what = config(fmt::format("{}", fmt::join(kChains[GetParam()], "+")), mode, f, w, h);
          // A pitch the CUDA allocator would pick, and the packed rows of an array (a multiple of nothing).
          expect_bits(src, want, chain, mode, cuda::device_pitch(w, f.pixel_bytes()), 0, what + " aligned pitch");
          expect_bits(src, want, chain, mode, static_cast<std::size_t>(w) * f.pixel_bytes(), 0, what + " packed rows");
        }
}

INSTANTIATE_TEST_SUITE_P(Chains, InPlace, ::testing::Range<std::size_t>(0, 4));

TEST(InPlace, ViewsTheKernelsCannotStoreToAndStreams) {
  TF_REQUIRE_GPU();
  const std::uint32_t seed = test::test_seed(4410);
  SCOPED_TRACE(fmt::format("seed {}", seed));
  const int device = gpus()[0]->info().ordinal;
  cuda::ScopedDevice on(device);
  cuda::Stream stream(device);
  for (const auto& specs : kChains)
    for (PixelType t : kEveryType) {
      const Format f{t, 4};
      const Image src = test::random_image(333, 97, f, seed);
      const Chain chain = parse_chain(specs);
      const Image want = cpu_reference(src, chain, sweep_border(BorderMode::Reflect101));
      const std::string what = config(specs.front(), BorderMode::Reflect101, f, 333, 97);
      // Starting one pixel into the buffer: loadable, but not at the 16 bytes of the kernels' stores.
      const std::size_t pitch = cuda::device_pitch(333, f.pixel_bytes());
      expect_bits(src, want, chain, BorderMode::Reflect101, pitch, f.pixel_bytes(), what + " offset", stream.get());
    }
}

// Each GPU keeps the last call's plan (its maps on the device) while the chain's footprints, the image
// size and the border repeat: chains of one footprint with other taps, a border changed between
// calls, another size and back, and a band split over every GPU in between give the CPU's bits.
TEST(DeviceImagePlans, KeptOnlyWhileTheyFitTheCall) {
  TF_REQUIRE_GPU();
  const std::uint32_t seed = test::test_seed(4420);
  SCOPED_TRACE(fmt::format("seed {}", seed));
  const int device = gpus()[0]->info().ordinal;
  const Format f{PixelType::U8, 4};
  struct Call {
    const char* spec;
    BorderMode mode;
    int w, h;
    bool split;
  };
  // gaussian:sigma=1.5 and box:radius=5 both reach 5 pixels; sharpen reaches 1.
  const Call calls[] = {{"gaussian:sigma=1.5", BorderMode::Reflect101, 301, 517, false},
                        {"box:radius=5", BorderMode::Reflect101, 301, 517, false},
                        {"gaussian:sigma=1.5", BorderMode::Constant, 301, 517, false},
                        {"gaussian:sigma=1.5", BorderMode::Reflect101, 517, 301, false},
                        {"gaussian:sigma=1.5", BorderMode::Reflect101, 301, 517, true},
                        {"sharpen", BorderMode::Reflect101, 301, 517, false},
                        {"gaussian:sigma=1.5", BorderMode::Reflect101, 301, 517, false}};
  for (const Call& call : calls) {
    const Chain chain = parse_chain({call.spec});
    const Image src = test::random_image(call.w, call.h, f, seed);
    const Image want = cpu_reference(src, chain, sweep_border(call.mode));
    DeviceImage in(src, device, cuda::device_pitch(call.w, f.pixel_bytes()), 0);
    DeviceImage out(src, device, in.view.pitch, 0);
    for (int repeat = 0; repeat < 2; ++repeat) {
      cuda::filter_device_image(in.view, out.view, chain, sweep_border(call.mode), device, nullptr,
                                call.split ? cuda::device_ordinals() : std::vector<int>{});
      EXPECT_TRUE(same_bits(want, out.download()))
          << config(call.spec, call.mode, f, call.w, call.h) << (call.split ? " split" : "") << " call " << repeat;
    }
  }
}

}  // namespace
}  // namespace tf::gputest
#endif
