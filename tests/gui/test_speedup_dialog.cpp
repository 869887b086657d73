// The speedup demo on CPU devices: 1..2 CPU workers, charts, the bound sentence, and the device
// panel filled from the same telemetry.
#include <QtCharts/QChart>
#include <QtCharts/QChartView>

#include "dialogs/speedup_dialog.hpp"
#include "gui_test_support.hpp"
#include "panels/device_card.hpp"
#include "panels/device_panel.hpp"
#include "views/timeline_view.hpp"
#include "window/main_window.hpp"

namespace tf::gui {
namespace {

using namespace tf::test;

TEST(SpeedupDialog, MeasuresOnCpuDevicesAndExplainsTheBound) {
  ensure_gui_app();
  MainWindow window(MainWindowOptions{false, false});
  window.show();
  window.set_chain({{entry_from_spec("box:radius=3")}, {}});
  SpeedupDialog* dialog = window.show_speedup_dialog();
  ASSERT_NE(dialog, nullptr);
  dialog->set_devices("cpu", 2);
  dialog->set_image_size(384, 256);
  dialog->set_repeats(2);
  ASSERT_TRUE(start_and_wait(dialog, &SpeedupDialog::measured)) << dialog->error_text().toStdString();
  const SpeedupResult& r = dialog->result();
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.points[0].device_count, 1);
  EXPECT_EQ(r.points[1].device_count, 2);
  EXPECT_DOUBLE_EQ(r.points[1].ideal, 2);
  EXPECT_FALSE(dialog->explanation().isEmpty());
  EXPECT_EQ(dialog->speedup_view()->chart()->series().size(), 3);  // ideal, measured, points
  EXPECT_EQ(dialog->split_view()->chart()->series().size(), 1);    // the stacked bars
  // The extra run on all devices reached the panel and the timeline.
  EXPECT_TRUE(window.device_panel()->card("cpu")->job_text().contains("2 worker"))
      << window.device_panel()->card("cpu")->job_text().toStdString();
  EXPECT_EQ(window.timeline()->lanes().size(), 2u);
}

// Before the first run both charts are clean: their titles, no axes (no "0.00" ticks, no "devices").
TEST(SpeedupDialog, ChartsAreEmptyBeforeTheFirstRun) {
  ensure_gui_app();
  MainWindow window(MainWindowOptions{false, false});
  SpeedupDialog* dialog = window.show_speedup_dialog();
  ASSERT_NE(dialog, nullptr);
  for (QChartView* view : {dialog->speedup_view(), dialog->split_view()}) {
    SCOPED_TRACE(view->objectName().toStdString());
    EXPECT_FALSE(view->chart()->title().isEmpty());
    EXPECT_TRUE(view->chart()->axes().isEmpty());
    EXPECT_TRUE(view->chart()->series().isEmpty());
    EXPECT_FALSE(view->chart()->legend()->isVisible());
  }
  save_shot(dialog, "speedup-dialog-empty.png");
}

TEST(SpeedupDialog, BadInputIsAMessage) {
  ensure_gui_app();
  MainWindow window(MainWindowOptions{false, false});
  SpeedupDialog* dialog = window.show_speedup_dialog();
  dialog->set_image_size(0, 10);
  bool done = false;
  QObject::connect(dialog, &SpeedupDialog::measured, [&](bool) { done = true; });
  dialog->start();
  ASSERT_TRUE(wait_for([&] { return done; }, 5000));
  EXPECT_TRUE(dialog->error_text().contains("size")) << dialog->error_text().toStdString();
}

}  // namespace
}  // namespace tf::gui
