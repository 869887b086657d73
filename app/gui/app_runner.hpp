// Starts the application from its options: theme, main window, the image, the chain, the devices,
// and for --screenshot the wait for the job and the PNG of the window.
#pragma once
#include "app_options.hpp"

class QApplication;
class QWidget;

namespace tf::gui {

// Runs the event loop; returns the process exit code.
int run_app(QApplication& app, const AppOptions& options);

// Renders a top-level widget to a PNG (works on the offscreen platform too). Returns false and says
// why on stderr when it cannot write the file.
bool save_screenshot(QWidget* widget, const QString& path);

// Registers the icons and presets compiled into tf_gui_lib (once; harmless to repeat).
void init_resources();

// Organization and application names for QSettings, QStandardPaths and --version.
void set_application_identity();

}  // namespace tf::gui
