// Preview latency and GUI responsiveness on a 24 Mpix image (6000x4000 RGB u8), measured the way a
// person meets them: time from a parameter change to the first preview on screen and to the full
// result, and the longest the event loop stalls meanwhile. Slow, so it runs only when asked:
//   TF_GUI_BENCH=1 QT_QPA_PLATFORM=offscreen tests/tf_gui_tests --gtest_filter='PreviewLatency.*'
// TF_GUI_BENCH_DEVICES picks the devices (default "all": the GPUs, else every CPU core).
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QTimer>
#include <QtTest/QTest>
#include <algorithm>
#include <cstdio>

#include "gui_test_support.hpp"
#include "panels/filter_panel.hpp"
#include "panels/message_bar.hpp"
#include "tilefilter/image/testimage.hpp"
#include "views/image_view.hpp"
#include "window/main_window.hpp"

namespace tf::gui {
namespace {

using namespace tf::test;

// Measures the longest gap between ticks of a 5 ms timer: how long the GUI thread was unavailable.
class StallMeter : public QObject {
 public:
  StallMeter() {
    timer_.setInterval(5);
    QObject::connect(&timer_, &QTimer::timeout, this, [this] {
      const qint64 now = clock_.nsecsElapsed();
      if (last_ > 0) worst_ = std::max(worst_, (now - last_) / 1e6 - 5.0);
      last_ = now;
    });
  }
  void start() {
    worst_ = 0;
    last_ = 0;
    clock_.start();
    timer_.start();
  }
  double stop() {
    timer_.stop();
    return std::max(0.0, worst_);
  }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 last_ = 0;
  double worst_ = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

TEST(PreviewLatency, TwentyFourMegapixels) {
  if (qEnvironmentVariableIsEmpty("TF_GUI_BENCH")) GTEST_SKIP() << "set TF_GUI_BENCH=1 to measure";
  ensure_gui_app();
  const QString devices = qEnvironmentVariable("TF_GUI_BENCH_DEVICES", "all");
  MainWindow window(MainWindowOptions{false, false});
  window.resize(1600, 1000);
  window.show();
  window.set_devices(devices);
  bool loaded = false;
  QObject::connect(&window, &MainWindow::image_loaded, [&] { loaded = true; });
  window.open_image(make_test_image(6000, 4000, Format{PixelType::U8, 3}, 1), "bench-6000x4000");
  ASSERT_TRUE(wait_for([&] { return loaded; }, 120000));

  std::vector<PreviewPass> passes;
  std::vector<double> latencies;
  QObject::connect(&window, &MainWindow::preview_shown, [&](PreviewPass pass, double ms) {
    passes.push_back(pass);
    latencies.push_back(ms);
  });
  window.set_chain({{entry_from_spec("gaussian:sigma=2")}, {}});
  ASSERT_TRUE(wait_for([&] { return window.idle() && window.current_full_result(); }, 120000));  // warm-up

  auto* sigma = window.findChild<QDoubleSpinBox*>("param.sigma.spin");
  ASSERT_NE(sigma, nullptr);
  StallMeter stalls;
  auto measure = [&](const char* label) {
    std::vector<double> first, full, stall;
    for (double s : {2.5, 3.0, 1.5, 2.0, 4.0}) {
      passes.clear();
      latencies.clear();
      stalls.start();
      sigma->setValue(s);
      ASSERT_TRUE(wait_for([&] { return window.idle() && window.current_full_result(); }, 120000))
          << window.message_bar()->text().toStdString();
      stall.push_back(stalls.stop());
      ASSERT_FALSE(latencies.empty());
      first.push_back(latencies.front());
      full.push_back(latencies.back());
    }
    std::printf(
        "[latency] %s, devices %s: first preview (%s) median %.0f ms; full 6000x4000 median %.0f ms; "
        "worst GUI stall %.0f ms\n",
        label, qPrintable(devices),
        passes.front() == PreviewPass::Full    ? "full"
        : passes.front() == PreviewPass::Proxy ? "proxy"
                                               : "region",
        median(first), median(full), *std::max_element(stall.begin(), stall.end()));
  };
  window.image_view()->zoom_fit();
  measure("fit to window");
  window.image_view()->zoom_actual();
  measure("100% zoom");

  // A continuous slider drag: a change every 30 ms for 2 s. Stale jobs are cancelled, the GUI keeps
  // up, and the last value's preview arrives. What a person waits for is the first view after the
  // last slider event: timed from that event (sigma 1.05..4.0, at fit to window), five drags.
  window.image_view()->zoom_fit();
  QElapsedTimer clock;
  clock.start();
  qint64 shown_at = -1;
  QObject::connect(&window, &MainWindow::preview_shown, [&](PreviewPass, double) {
    if (shown_at < 0) shown_at = clock.nsecsElapsed();
  });
  std::vector<double> after_last;
  double drag_stall = 0;
  int changes = 0, shown_during_drag = 0;
  for (int d = 0; d < 5; ++d) {
    passes.clear();
    stalls.start();
    QElapsedTimer drag;
    drag.start();
    qint64 last_event = 0;
    while (drag.elapsed() < 2000) {
      shown_at = -1;
      sigma->setValue(1.0 + 0.05 * (++changes % 60 + d));
      last_event = clock.nsecsElapsed();
      QTest::qWait(30);
    }
    shown_during_drag += static_cast<int>(passes.size());
    ASSERT_TRUE(wait_for([&] { return shown_at >= 0; }, 120000));
    after_last.push_back((shown_at - last_event) / 1e6);
    drag_stall = std::max(drag_stall, stalls.stop());
    ASSERT_TRUE(wait_for([&] { return window.idle() && window.current_full_result(); }, 120000));
  }
  std::printf(
      "[latency] slider drags, devices %s: %d changes in 5 x 2 s, %d previews shown meanwhile; first view after the "
      "last slider event median %.0f ms, max %.0f ms; worst GUI stall %.0f ms\n",
      qPrintable(devices), changes, shown_during_drag, median(after_last),
      *std::max_element(after_last.begin(), after_last.end()), drag_stall);
}

}  // namespace
}  // namespace tf::gui
