// The GPU side of the device panel and the timeline, with stand-in GPUs (fake_gpu.hpp): a card per
// GPU with NVML-style utilization and memory, upload/kernel/download bars, a timeline lane per stream.
#include <QDoubleSpinBox>
#include <QtTest/QTest>

#include "fake_gpu.hpp"
#include "gui_test_support.hpp"
#include "model/preview_engine.hpp"
#include "panels/device_card.hpp"
#include "panels/device_panel.hpp"
#include "panels/filter_panel.hpp"
#include "panels/message_bar.hpp"
#include "platform/device_hub.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "views/image_view.hpp"
#include "views/stage_bars.hpp"
#include "views/timeline_view.hpp"
#include "views/utilization_graph.hpp"
#include "window/main_window.hpp"

namespace tf::gui {
namespace {

using namespace tf::test;

class FakeGpuPanel : public ::testing::Test {
 protected:
  void SetUp() override {
    ensure_gui_app();
    install_fake_gpus(2);
    DeviceHub::instance().forget_devices();
  }
  void TearDown() override {
    tf::cuda::install_backend();  // back to what the build has
    DeviceHub::instance().forget_devices();
  }
};

TEST_F(FakeGpuPanel, CardsBarsAndStreamLanes) {
  MainWindow window(MainWindowOptions{false, false});
  window.resize(1280, 800);
  window.show();
  ASSERT_NE(window.device_panel()->card("gpu0"), nullptr);
  ASSERT_NE(window.device_panel()->card("gpu1"), nullptr);
  ASSERT_NE(window.device_panel()->card("cpu"), nullptr);

  TempDir dir;
  const QString path = write_image(dir, "photo.png", 1000, 700);
  bool loaded = false;
  QObject::connect(&window, &MainWindow::image_loaded, [&] { loaded = true; });
  window.open_file(path);
  ASSERT_TRUE(wait_for([&] { return loaded; }));
  window.set_devices("gpu");
  window.set_chain({{entry_from_spec("gaussian:sigma=2"), entry_from_spec("sobel")}, {}});
  ASSERT_TRUE(wait_for([&] { return window.idle() && window.current_full_result(); }))
      << window.message_bar()->text().toStdString();
  EXPECT_EQ(first_difference(window.image_view()->after_image(),
                             core_output(path.toStdString(), {"gaussian:sigma=2", "sobel"})),
            "");

  int tiles = 0;
  for (const char* id : {"gpu0", "gpu1"}) {
    DeviceCard* card = window.device_panel()->card(id);
    const auto& bars = card->bars()->bars();
    ASSERT_EQ(bars.size(), 4u) << id;  // upload, kernel, download, idle
    EXPECT_EQ(bars[0].label, "Upload");
    EXPECT_EQ(bars[2].label, "Download");
    tiles += bars[1].seconds > 0;
    EXPECT_TRUE(card->job_text().contains("stream")) << card->job_text().toStdString();
  }
  EXPECT_GE(tiles, 1);
  // Streams of both GPUs have lanes; the CPU card says it was not used.
  std::size_t gpu_lanes = 0;
  for (const auto& lane : window.timeline()->lanes()) gpu_lanes += lane.label.startsWith("gpu");
  EXPECT_GE(gpu_lanes, 2u);
  EXPECT_TRUE(window.device_panel()->card("cpu")->job_text().contains("not used"));
  // NVML-style samples reach the GPU cards.
  ASSERT_TRUE(wait_for([&] { return window.device_panel()->card("gpu0")->graph()->samples() >= 2; }, 3000));
  QTest::qWait(300);
  save_shot(&window, "fake-gpus.png");
}

// On GPUs, a small first pass goes to the CPU workers (first_pass_on_cpu: a GPU job's fixed cost
// would delay the first view) with the bits the GPUs give there; the full pass stays on the GPUs.
TEST_F(FakeGpuPanel, SmallFirstPassOnTheCpuWorkersFullPassOnTheGpus) {
  MainWindow window(MainWindowOptions{false, false});
  window.resize(1280, 800);
  window.show();
  const Image image = random_image(2400, 1500, Format{PixelType::U8, 3}, test_seed(4301));  // a first pass's size
  bool loaded = false;
  QObject::connect(&window, &MainWindow::image_loaded, [&] { loaded = true; });
  window.open_image(image, "random");
  ASSERT_TRUE(wait_for([&] { return loaded; }));
  std::vector<PreviewResult> results;
  QObject::connect(window.preview_engine(), &PreviewEngine::result_ready,
                   [&](const PreviewResult& r) { results.push_back(r); });
  window.image_view()->zoom_actual();  // 100 %: the visible region at full resolution first
  for (const char* devices : {"gpu", "cpu"}) {
    SCOPED_TRACE(devices);
    results.clear();
    window.set_devices(devices);
    window.set_chain(
        {{entry_from_spec(std::string(devices) == "gpu" ? "gaussian:sigma=1" : "gaussian:sigma=1.2")}, {}});
    ASSERT_TRUE(wait_for([&] { return window.idle() && window.current_full_result(); }))
        << window.message_bar()->text().toStdString();
    ASSERT_EQ(results.size(), 2u);
    const PreviewResult& first = results.front();
    const PreviewResult& full = *window.current_full_result();
    EXPECT_EQ(first.pass, PreviewPass::Region);
    // "cpu": the chosen devices are the CPU workers already, nothing moves.
    EXPECT_EQ(first.on_cpu_workers, std::string(devices) == "gpu");
    EXPECT_FALSE(full.on_cpu_workers);
    const JobReport& report = *full.report;
    for (std::size_t i = 0; i < report.tiles_per_device.size(); ++i)
      if (report.tiles_per_device[i] > 0)
        EXPECT_TRUE(report.device_names[i].starts_with(devices)) << report.device_names[i];
    ASSERT_FALSE(first.shown.isEmpty());
    EXPECT_TRUE(first.display.base == full.display.base.copy(first.shown)) << "the region differs from the full pass";
  }
}

}  // namespace
}  // namespace tf::gui
