// tilefilter-gui: the desktop application. Everything lives in tf_gui_lib (shared with the widget
// tests); this file only installs the GPU backend, reads the command line and runs the window.
#include <QApplication>

#include "platform/device_hub.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "window/app_options.hpp"
#include "window/app_runner.hpp"

int main(int argc, char** argv) {
  tf::cuda::install_backend();
  if (tf::gui::wants_help_only(argc, argv)) {
    // --help and --version need no display.
    QCoreApplication app(argc, argv);
    tf::gui::set_application_identity();
    int code = 0;
    tf::gui::parse_app_options(app, code);
    return code;
  }
  // The GPUs come up (driver, contexts) while Qt starts, the window is built and the first previews
  // run on the CPU workers; nothing waits for them (DeviceHub).
  tf::gui::DeviceHub::instance().start_discovery();
  if (!tf::gui::choose_platform(argc, argv)) return 1;
  QApplication app(argc, argv);
  tf::gui::set_application_identity();
  int code = 0;
  const auto options = tf::gui::parse_app_options(app, code);
  if (!options) return code;
  return tf::gui::run_app(app, *options);
}
