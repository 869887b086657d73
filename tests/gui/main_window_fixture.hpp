// The real main window, shown offscreen, for the widget tests that drive it like a person.
#pragma once
#include <gtest/gtest.h>

#include <QAction>
#include <QObject>
#include <QString>
#include <memory>

#include "gui_test_support.hpp"
#include "panels/message_bar.hpp"
#include "window/main_window.hpp"

namespace tf::gui {

class MainWindowFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    test::ensure_gui_app();
    window = std::make_unique<MainWindow>(MainWindowOptions{false, false});
    window->resize(1200, 800);
    window->show();
  }

  // Opens `path` and waits until the window says it is loaded.
  void open(const QString& path, int timeout_ms = 30000) {
    bool loaded = false;
    QObject::connect(window.get(), &MainWindow::image_loaded, [&] { loaded = true; });
    window->open_file(path);
    ASSERT_TRUE(test::wait_for([&] { return loaded; }, timeout_ms))
        << "the image did not open: " << window->message_bar()->text().toStdString();
  }

  // Waits until the full-resolution preview of the panel's current chain is on screen.
  void wait_for_preview() {
    ASSERT_TRUE(test::wait_for([&] { return window->idle() && window->current_full_result() != nullptr; }))
        << "no preview; message: " << window->message_bar()->text().toStdString();
  }

  // Adds a filter as the panel's "Add filter" menu does.
  void add_filter(const char* name) {
    auto* action = window->findChild<QAction*>(QStringLiteral("add.%1").arg(QLatin1String(name)));
    ASSERT_NE(action, nullptr) << name;
    action->trigger();
  }

  template <class W> W* find(const char* name) {
    W* w = window->findChild<W*>(QLatin1String(name));
    EXPECT_NE(w, nullptr) << name;
    return w;
  }

  test::TempDir dir;
  std::unique_ptr<MainWindow> window;
};

}  // namespace tf::gui
