// Helpers for the widget tests: one QApplication per test process (offscreen unless the
// environment says otherwise), waiting on the event loop, small images on disk.
#pragma once
#include <QImage>
#include <QObject>
#include <QString>
#include <functional>

#include <gtest/gtest.h>

class QWidget;

#include "test_support.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/image/image.hpp"

namespace tf::test {

// Creates the application (and isolates settings and kernel files in a temp folder) on first use.
void ensure_gui_app();

// Runs the event loop until `done` holds; false after timeout_ms.
bool wait_for(const std::function<bool()>& done, int timeout_ms = 30000);

// Calls dialog->start() and waits for its `finished` signal (one bool: whether the job ran); that
// bool, or false after timeout_ms (a failed expectation too).
template <class Dialog, class Signal> bool start_and_wait(Dialog* dialog, Signal finished, int timeout_ms = 60000) {
  bool done = false, ok = false;
  const QMetaObject::Connection c = QObject::connect(dialog, finished, [&](bool success) {
    done = true;
    ok = success;
  });
  dialog->start();
  EXPECT_TRUE(wait_for([&] { return done; }, timeout_ms));
  QObject::disconnect(c);
  return ok;
}

// Writes a generated photo-like image and returns its path.
QString write_image(const TempDir& dir, const std::string& name, int width, int height, int channels = 3,
                    std::uint32_t seed = 1);

// With TF_GUI_SHOTS=DIR set, saves a PNG of `widget` there (to look at dialogs while developing).
void save_shot(QWidget* widget, const char* name);

// What core makes of `path` with `specs` (on one CPU worker: every device gives the same bits).
Image core_output(const std::string& path, const std::vector<std::string>& specs, const Border& border = {});

// The first position where the displayed image differs from core's u8 pixels, or "" when equal.
std::string first_difference(const QImage& shown, const Image& expected);

}  // namespace tf::test
