// The window and the first preview come before the GPUs are ready, and later previews move to them
// (docs/design.md, "Start-up"). A fake GPU provider holds discovery until the test lets it go, so
// "before the GPUs are ready" is certain however loaded the machine is. A watchdog lets it go after
// 15 s, so that something waiting for discovery fails the checks instead of hanging the test.
#include <QComboBox>
#include <atomic>
#include <filesystem>
#include <future>
#include <memory>
#include <thread>

#include "dialogs/batch_dialog.hpp"
#include "fake_gpu.hpp"
#include "gui_test_support.hpp"
#include "panels/device_card.hpp"
#include "panels/device_panel.hpp"
#include "panels/filter_panel.hpp"
#include "panels/message_bar.hpp"
#include "platform/device_hub.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/io/codec.hpp"
#include "window/main_window.hpp"

namespace tf::gui {
namespace {

using namespace tf::test;

// The devices that filtered tiles of the last full preview ("cpu-fallback" included when it did).
std::vector<std::string> devices_with_tiles(const MainWindow& window) {
  std::vector<std::string> out;
  const JobReport& report = *window.current_full_result()->report;
  for (std::size_t i = 0; i < report.tiles_per_device.size(); ++i)
    if (report.tiles_per_device[i] > 0) out.push_back(report.device_names[i]);
  return out;
}

class GpuStartup : public ::testing::Test {
 protected:
  void SetUp() override {
    ensure_gui_app();
    // Shared with the provider, which runs on the discovery thread and may outlive a failed test.
    auto released = release_->get_future().share();
    auto calls = calls_;
    DevicePtr gpu = make_fake_gpu(0);
    set_gpu_provider([released, calls, gpu](std::size_t, const std::vector<int>&) {
      released.wait();
      ++*calls;
      return GpuDiscovery{{gpu}, {}};
    });
    DeviceHub::instance().forget_devices();
    DeviceHub::instance().start_discovery();
    watchdog_ = std::thread([this, released] {
      if (released.wait_for(std::chrono::seconds(15)) == std::future_status::timeout) release();
    });
  }
  void TearDown() override {
    release();
    watchdog_.join();
    tf::cuda::install_backend();  // back to what the build has
    DeviceHub::instance().forget_devices();
  }
  void release() {
    if (!released_.exchange(true)) release_->set_value();
  }
  // Waits for the full preview of the current chain and devices.
  void wait_for_preview(const MainWindow& window) {
    ASSERT_TRUE(wait_for([&] { return window.idle() && window.current_full_result(); }, 20000))
        << "no preview; message: " << window.message_bar()->text().toStdString();
  }

  std::shared_ptr<std::promise<void>> release_ = std::make_shared<std::promise<void>>();
  std::shared_ptr<std::atomic<int>> calls_ = std::make_shared<std::atomic<int>>(0);
  std::atomic<bool> released_{false};
  std::thread watchdog_;
};

TEST_F(GpuStartup, FirstPreviewOnTheCpuWhileDiscoveryRunsThenOnTheGpu) {
  auto& hub = DeviceHub::instance();
  MainWindow window(MainWindowOptions{false, false});
  window.resize(1200, 800);
  window.show();
  EXPECT_FALSE(hub.gpus_ready());
  EXPECT_EQ(window.device_panel()->card("gpu0"), nullptr);
  ASSERT_NE(window.device_panel()->card("cpu"), nullptr);

  const Image image = random_image(301, 203, Format{PixelType::U8, 3}, test_seed(36));
  bool loaded = false;
  QObject::connect(&window, &MainWindow::image_loaded, [&] { loaded = true; });
  window.open_image(image, "random");
  ASSERT_TRUE(wait_for([&] { return loaded; }, 20000));
  const std::vector<std::string> specs = {"gaussian:sigma=2", "sobel"};
  window.set_chain({{entry_from_spec(specs[0]), entry_from_spec(specs[1])}, {}});
  ASSERT_EQ(window.filter_panel()->devices(), "all");
  wait_for_preview(window);
  // Still held: the window and the preview did not wait for discovery, and "all" took the CPU.
  EXPECT_FALSE(hub.gpus_ready());
  EXPECT_EQ(*calls_, 0);
  for (const auto& id : devices_with_tiles(window)) EXPECT_TRUE(id.starts_with("cpu")) << id;
  const Image on_cpu = window.current_full_result()->pixels;
  const Image expected = filter_image(image, parse_chain(specs), select_devices("cpu:1").devices, {});
  EXPECT_EQ(compare(on_cpu.view(), expected.view()).max_abs, 0);

  // Discovery finishes: the device panel and the device choice learn of the GPU.
  release();
  ASSERT_TRUE(wait_for([&] { return hub.gpus_ready() && window.device_panel()->card("gpu0"); }, 20000));
  auto* choice = window.filter_panel()->findChild<QComboBox*>("deviceChoice");
  ASSERT_NE(choice, nullptr);
  EXPECT_GE(choice->findData("0"), 0);
  EXPECT_EQ(window.filter_panel()->devices(), "all");

  // The next preview of the same chain runs on the GPU, with the same bits.
  window.set_devices("all");
  wait_for_preview(window);
  EXPECT_EQ(devices_with_tiles(window), std::vector<std::string>{"gpu0"});
  EXPECT_EQ(compare(window.current_full_result()->pixels.view(), on_cpu.view()).max_abs, 0);
}

TEST_F(GpuStartup, NamedGpuWaitsForDiscovery) {
  auto& hub = DeviceHub::instance();
  // "cpu" does not wait; "all" takes the CPU workers meanwhile; "0" needs the GPU, so it waits.
  EXPECT_EQ(hub.select("cpu").devices.front()->info().kind, DeviceKind::Cpu);
  const DeviceSelection meanwhile = hub.select("all");
  for (const auto& d : meanwhile.devices) EXPECT_EQ(d->info().kind, DeviceKind::Cpu);
  EXPECT_FALSE(meanwhile.note.empty());
  auto named = std::async(std::launch::async, [&] { return hub.select("0"); });
  EXPECT_EQ(named.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  release();
  ASSERT_EQ(named.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  const DeviceSelection gpu = named.get();
  ASSERT_EQ(gpu.devices.size(), 1u);
  EXPECT_EQ(gpu.devices[0]->info().id, "gpu0");
  EXPECT_EQ(hub.select("all").devices[0]->info().id, "gpu0");
  // After discovery "all" is the hub's own GPU objects, not a second set from the provider.
  ASSERT_FALSE(hub.gpus().empty());
  EXPECT_EQ(hub.select("all").devices[0].get(), hub.gpus()[0].get());
  // GPUs named by number too, alone or beside CPU workers; the provider was asked once.
  EXPECT_EQ(gpu.devices[0].get(), hub.gpus()[0].get());
  const DeviceSelection mixed = hub.select("0,cpu:2");
  ASSERT_EQ(mixed.devices.size(), 3u);
  EXPECT_EQ(mixed.devices[0].get(), hub.gpus()[0].get());
  EXPECT_EQ(mixed.devices[1]->info().kind, DeviceKind::Cpu);
  EXPECT_EQ(*calls_, 1);
}

TEST_F(GpuStartup, BatchUsesTheHubsDevicesWithoutASecondDiscovery) {
  auto& hub = DeviceHub::instance();
  release();
  ASSERT_TRUE(wait_for([&] { return hub.gpus_ready(); }, 20000));
  ASSERT_EQ(*calls_, 1);
  TempDir dir;
  std::filesystem::create_directories(dir.path / "in");
  for (int i = 0; i < 3; ++i) write_image(dir, "in/img" + std::to_string(i) + ".png", 160 + i, 90, 3, i);
  MainWindow window(MainWindowOptions{false, false});
  window.set_chain({{entry_from_spec("gaussian:sigma=2")}, {}});
  window.set_devices("all");
  BatchDialog* dialog = window.show_batch_dialog();
  dialog->set_folders(QString::fromStdString(dir / "in"), QString::fromStdString(dir / "out"));
  EXPECT_TRUE(start_and_wait(dialog, &BatchDialog::batch_finished)) << dialog->error_text().toStdString();
  EXPECT_TRUE(dialog->failed_files().isEmpty());
  // The batch took the GPU the hub had found: the provider was not asked again.
  EXPECT_EQ(*calls_, 1);
  // The same bits as on the CPU (the fake GPU filters as the CPU backend does).
  const Image got = decode_file(dir / "out/img1.png");
  const Image src = decode_file(dir / "in/img1.png");
  const Image expected = filter_image(src, parse_chain({"gaussian:sigma=2"}), select_devices("cpu:1").devices, {});
  EXPECT_EQ(compare(got.view(), expected.view()).max_abs, 0);
}

}  // namespace
}  // namespace tf::gui
