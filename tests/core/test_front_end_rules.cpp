// The rules every front end asks core for (the CLI, the C API, the GUI, Python through the C API):
// what a device spec means, when an image on a GPU is spread over several, and the job options'
// ranges and messages.
#include <gtest/gtest.h>

#include "tilefilter/engine/device_selection.hpp"
#include "tilefilter/engine/job_settings.hpp"
#include "tilefilter/util/error.hpp"

namespace tf {
namespace {

using Use = DeviceSpec::GpuUse;

// The message of the tf::Error `f` throws, after checking its kind.
template <class F> std::string message_of(F f, ErrorKind kind = ErrorKind::InvalidArgument) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(DeviceSpec, ReadsEveryItem) {
  const DeviceSpec s = parse_device_spec("2,cpu:3,gpu,cpu,all");
  ASSERT_EQ(s.items.size(), 5u);
  EXPECT_EQ(s.items[0].kind, DeviceSpec::Kind::Ordinal);
  EXPECT_EQ(s.items[0].number, 2);
  EXPECT_EQ(s.items[1].kind, DeviceSpec::Kind::CpuCount);
  EXPECT_EQ(s.items[1].number, 3);
  EXPECT_EQ(s.items[2].kind, DeviceSpec::Kind::Gpu);
  EXPECT_EQ(s.items[3].kind, DeviceSpec::Kind::Cpu);
  EXPECT_EQ(s.items[4].kind, DeviceSpec::Kind::All);
  EXPECT_EQ(parse_device_spec("").text, "all");
}

TEST(DeviceSpec, HowItTakesGpus) {
  EXPECT_EQ(parse_device_spec("").gpu_use(), Use::Any);
  EXPECT_EQ(parse_device_spec("all").gpu_use(), Use::Any);
  EXPECT_EQ(parse_device_spec("cpu,gpu").gpu_use(), Use::Any);
  EXPECT_EQ(parse_device_spec("cpu").gpu_use(), Use::None);
  EXPECT_EQ(parse_device_spec("cpu:4,cpu").gpu_use(), Use::None);
  EXPECT_EQ(parse_device_spec("all,1").gpu_use(), Use::Named);
  EXPECT_EQ(parse_device_spec("0,cpu:2").gpu_use(), Use::Named);
  EXPECT_TRUE(parse_device_spec("0,cpu:2").names_cpus());
  EXPECT_FALSE(parse_device_spec("0,1,all").names_cpus());
}

// Discovery makes devices (contexts, buffers) only for the GPUs a spec names by number; "all" and "gpu"
// take every GPU. A missing GPU is named with how many the driver reports, not how many were made.
TEST(DeviceSelection, DiscoveryMakesOnlyTheNamedGpus) {
  std::vector<std::vector<int>> asked;
  set_gpu_provider([&asked](std::size_t, const std::vector<int>& only) {
    asked.push_back(only);
    GpuDiscovery none;
    none.visible = 4;
    none.message = "a fake driver with four GPUs that make no device";
    return none;
  });
  struct Restore {
    ~Restore() { set_gpu_provider({}); }
  } restore;
  EXPECT_NE(message_of([] { select_devices("2,cpu:1"); }, ErrorKind::Device).find("there is no GPU 2 (4 found"),
            std::string::npos);
  EXPECT_EQ(select_devices("all").devices.front()->info().kind, DeviceKind::Cpu);  // no GPU: the CPU
  (void)message_of([] { select_devices("1,gpu"); }, ErrorKind::Device);
  (void)select_devices("cpu");  // asks for no GPU at all
  ASSERT_EQ(asked.size(), 3u);
  EXPECT_EQ(asked[0], std::vector<int>{2});
  EXPECT_TRUE(asked[1].empty());
  EXPECT_TRUE(asked[2].empty());
}

TEST(DeviceSpec, MistakesNameTheFlagAndTheItem) {
  EXPECT_NE(message_of([] { parse_device_spec("0,banana"); }).find("--devices '0,banana': 'banana'"),
            std::string::npos);
  EXPECT_NE(message_of([] { parse_device_spec("cpu:0"); }).find("cpu:N needs 1 <= N <= 1024"), std::string::npos);
  EXPECT_NE(message_of([] { parse_device_spec("0,,1"); }).find("is not a device number"), std::string::npos);
  EXPECT_NE(message_of([] { parse_device_spec("-1"); }).find("'-1'"), std::string::npos);
  // select_devices reads specs the same way, before asking for any GPU.
  EXPECT_NE(message_of([] { select_devices("cpu:2,x"); }).find("'x' is not a device number"), std::string::npos);
}

TEST(DeviceImageGpus, EveryGpuOnlyWhereTheWorkOutweighsTheCopies) {
  const Chain light = parse_chain({"gaussian:sigma=1.5"});  // 22 multiply-adds a sample
  const Chain heavy = parse_chain({"gaussian:sigma=15"});   // 182
  const Format rgba8{PixelType::U8, 4}, rgba_f32{PixelType::F32, 4};
  const long long big = 8192LL * 8192, small = kSplitMinPixels - 1;
  int asked = 0;
  auto gpus = [&] {
    ++asked;
    return std::vector<int>{0, 1, 2};
  };
  const DeviceSpec all = parse_device_spec("all"), gpu = parse_device_spec("gpu");
  EXPECT_TRUE(device_image_gpus(all, light, rgba8, big, gpus).empty());
  EXPECT_TRUE(device_image_gpus(all, heavy, rgba8, small, gpus).empty());
  EXPECT_EQ(asked, 0);
  EXPECT_EQ(device_image_gpus(all, heavy, rgba8, big, gpus), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(device_image_gpus(gpu, heavy, rgba8, big, gpus), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(asked, 2);
  // Four bytes a sample: the same chain's copies cost four times as much.
  EXPECT_FALSE(worth_splitting(heavy, rgba_f32, big));
  EXPECT_TRUE(worth_splitting(heavy, rgba8, kSplitMinPixels));
}

TEST(DeviceImageGpus, NamedGpusAsGivenAndNoCpus) {
  const Chain chain = parse_chain({"box:radius=2"});
  const Format gray{PixelType::U16, 1};
  auto none = [] {
    ADD_FAILURE() << "discovery asked for a spec of ordinals";
    return std::vector<int>{};
  };
  EXPECT_EQ(device_image_gpus(parse_device_spec("1,0,1"), chain, gray, 100, none), (std::vector<int>{1, 0}));
  EXPECT_EQ(device_image_gpus(parse_device_spec("3"), chain, gray, 100, none), (std::vector<int>{3}));
  for (const char* spec : {"cpu", "cpu:2", "0,cpu:1"})
    EXPECT_NE(message_of([&] {
                device_image_gpus(parse_device_spec(spec), chain, gray, 100, none);
              }).find("filtered on GPUs"),
              std::string::npos)
        << spec;
}

TEST(JobSettings, StreamsBetweenOneAndSixtyFour) {
  JobSettings s;
  EXPECT_EQ(make_job_options(s).schedule.streams_per_device, 0);  // none given: the backend's choice
  for (int n : {1, 7, kMaxStreams}) {
    s.streams = n;
    EXPECT_EQ(make_job_options(s).schedule.streams_per_device, n);
  }
  for (int n : {0, -1, kMaxStreams + 1}) {
    s.streams = n;
    const std::string m = message_of([&] { make_job_options(s); });
    EXPECT_NE(m.find("--streams"), std::string::npos) << m;
    EXPECT_NE(m.find("between 1 and 64"), std::string::npos) << m;
  }
}

TEST(JobSettings, BorderTileAndExact) {
  JobSettings s;
  const Border preset{BorderMode::Wrap, 0};
  EXPECT_EQ(make_job_options(s, preset).border.mode, BorderMode::Wrap);  // none named: the default given
  s.border = "constant";
  s.border_value = 7.5;
  const JobOptions o = make_job_options(s, preset);
  EXPECT_EQ(o.border.mode, BorderMode::Constant);
  EXPECT_EQ(o.border.value, 7.5f);
  s.tile = {96, 40};
  s.exact = true;
  EXPECT_EQ(make_job_options(s).schedule.tile, (TileSize{96, 40}));
  EXPECT_TRUE(make_job_options(s).exact);
  s.tile = {-1, 40};
  EXPECT_NE(message_of([&] { make_job_options(s); }).find("--tile"), std::string::npos);
  s.tile = {};
  s.border = "mirror";
  const std::string m = message_of([&] { make_job_options(s); });
  EXPECT_NE(m.find("--border 'mirror'"), std::string::npos) << m;
  EXPECT_NE(m.find("reflect101"), std::string::npos) << m;
}

}  // namespace
}  // namespace tf
