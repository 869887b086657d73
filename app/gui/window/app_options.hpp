// tilefilter-gui's command line. Everything a person can do at start-up, and what the tests and the
// README screenshots use: open a file (or a generated image), set the chain, the devices, then
// render the window to a PNG once the job has finished and quit.
#pragma once
#include <QSize>
#include <QString>
#include <QStringList>
#include <optional>

class QCoreApplication;

namespace tf::gui {

struct AppOptions {
  QString file;                  // image to open
  QSize generate;                // or a generated photo-like image of this size
  QStringList filters;           // --filter SPEC, in order
  QString border;                // --border MODE
  QString devices;               // --devices SPEC
  QString preset;                // --preset FILE
  bool apply = false;            // --apply: apply the chain before the screenshot
  QString screenshot;            // --screenshot FILE
  QString speedup_screenshot;    // --speedup-screenshot FILE
  QString bench_plot, plot_out;  // --bench-plot BENCH.json --plot-out PNG (no window)
  QString zoom;                  // fit | 100 | percent
  double split = 0.5;            // before/after split position
  QSize window{1600, 1000};      // --window WxH
  bool light = false;
  bool no_settings = false;
  int timeout_s = 300;  // give up waiting for the job (screenshots)
};

// Parses the application's arguments. On --help or --version it prints and returns nullopt with
// `exit_code` 0; on a usage error it prints the reason and returns nullopt with `exit_code` 2.
std::optional<AppOptions> parse_app_options(const QCoreApplication& app, int& exit_code);

// True when the arguments only ask for help or the version (no display is needed then).
bool wants_help_only(int argc, char** argv);

// Without a display (no DISPLAY or WAYLAND_DISPLAY, no QT_QPA_PLATFORM), a screenshot run goes
// offscreen by itself; anything else says so and returns false instead of letting Qt abort.
bool choose_platform(int argc, char** argv);

}  // namespace tf::gui
