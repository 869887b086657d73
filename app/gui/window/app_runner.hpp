// Starts the application from its options: theme, main window, the image, the chain, the devices,
// and for --screenshot the wait for the job and the PNG of the window.
#pragma once
#include "app_options.hpp"
#include "platform/app_identity.hpp"  // what main.cpp and the tests also need from here

class QApplication;
class QWidget;

namespace tf::gui {

// Runs the event loop; returns the process exit code.
int run_app(QApplication& app, const AppOptions& options);

}  // namespace tf::gui
