#include "app_runner.hpp"

#include "platform/app_identity.hpp"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QPixmap>
#include <QSettings>
#include <QTemporaryDir>
#include <QTimer>
#include <cstdio>
#include <functional>

#include "dialogs/speedup_dialog.hpp"
#include "main_window.hpp"
#include "model/preset_files.hpp"
#include "panels/filter_panel.hpp"
#include "platform/theme.hpp"
#include "tilefilter/image/testimage.hpp"
#include "tilefilter/util/error.hpp"
#include "views/bench_plot.hpp"
#include "views/image_view.hpp"

namespace tf::gui {

namespace {

// Makes the chain from the command line; prints core's message and returns false when a spec is bad.
bool chain_from_options(const AppOptions& o, ChainSettings& chain) {
  try {
    if (!o.preset.isEmpty()) chain = read_preset(o.preset).chain;
    for (const QString& spec : o.filters) chain.filters.push_back(entry_from_spec(spec.toStdString()));
    if (!o.border.isEmpty()) chain.border.mode = *parse_border_mode(o.border.toStdString());
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilefilter-gui: %s\n", e.what());
    return false;
  }
}

void set_zoom(ImageView* view, const QString& zoom) {
  if (zoom.isEmpty() || zoom == "fit") return view->zoom_fit();
  bool ok = false;
  const double percent = QString(zoom).remove('%').toDouble(&ok);
  if (ok && percent > 0) view->set_zoom(percent / 100.0 / view->devicePixelRatioF(), view->rect().center());
}

// Drives the speedup demo for --speedup-screenshot.
int run_speedup_screenshot(QApplication& app, MainWindow& window, const AppOptions& o, const ChainSettings& chain) {
  SpeedupDialog* dialog = window.show_speedup_dialog();
  dialog->resize(1100, 780);
  if (!chain.filters.empty()) dialog->set_chain(chain);
  if (o.generate.isValid()) dialog->set_image_size(o.generate.width(), o.generate.height());
  int code = 1;
  QObject::connect(dialog, &SpeedupDialog::measured, &app, [&](bool ok) {
    QTimer::singleShot(300, &app, [&, ok] {
      code = ok && save_screenshot(dialog, o.speedup_screenshot) ? 0 : 1;
      if (!ok) std::fprintf(stderr, "tilefilter-gui: speedup demo failed: %s\n", qPrintable(dialog->error_text()));
      app.quit();
    });
  });
  QTimer::singleShot(0, dialog, &SpeedupDialog::start);
  QTimer::singleShot(o.timeout_s * 1000, &app, [&] {
    std::fprintf(stderr, "tilefilter-gui: the speedup demo did not finish within %d s\n", o.timeout_s);
    app.exit(1);
  });
  app.exec();
  return code;
}

}  // namespace

int run_app(QApplication& app, const AppOptions& o) {
  if (!o.bench_plot.isEmpty()) {
    apply_theme(app, !o.light);
    return write_bench_plot(o.bench_plot, o.plot_out);
  }
  std::unique_ptr<QTemporaryDir> fresh_settings;
  if (o.no_settings) {
    // Settings go to a throw-away folder: nothing is read from or written to the user's.
    fresh_settings = std::make_unique<QTemporaryDir>();
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, fresh_settings->path());
  }
  apply_theme(app, !o.light && QSettings().value("view/dark", true).toBool());

  ChainSettings chain;
  if (!chain_from_options(o, chain)) return 2;

  MainWindowOptions wo;
  wo.use_settings = !o.no_settings;
  wo.confirm_close = o.screenshot.isEmpty() && o.speedup_screenshot.isEmpty();
  MainWindow window(wo);
  if (o.no_settings || !QSettings().contains("window/geometry")) window.resize(o.window);
  if (!o.devices.isEmpty()) window.set_devices(o.devices);
  if (!chain.filters.empty() || !o.preset.isEmpty()) window.set_chain(chain);
  window.image_view()->set_split(o.split);
  window.show();

  if (!o.speedup_screenshot.isEmpty()) return run_speedup_screenshot(app, window, o, chain);

  if (o.generate.isValid())
    window.open_image(
        make_test_image(o.generate.width(), o.generate.height(), Format{PixelType::U8, 3}, 1, Pattern::Photo),
        QStringLiteral("generated-%1x%2.png").arg(o.generate.width()).arg(o.generate.height()));
  else if (!o.file.isEmpty()) window.open_file(o.file);

  int code = 0;
  if (!o.screenshot.isEmpty()) {
    // The screenshot is taken when the image is open, the preview (and Apply, if asked) is done,
    // and the utilization graphs have a few samples after the job.
    bool loaded = false, applied = !o.apply, shooting = false;
    std::function<void()> maybe_shoot = [&] {
      if (shooting || !loaded || !applied || !window.idle()) return;
      shooting = true;
      QTimer::singleShot(1500, &app, [&] {
        if (!window.idle()) {  // something started meanwhile (a re-planned preview): wait for it
          shooting = false;
          return;
        }
        code = save_screenshot(&window, o.screenshot) ? 0 : 1;
        app.quit();
      });
    };
    QObject::connect(&window, &MainWindow::image_loaded, &app, [&] {
      set_zoom(window.image_view(), o.zoom);
      loaded = true;
      if (o.apply) window.apply();
      maybe_shoot();
    });
    QObject::connect(&window, &MainWindow::applied, &app, [&] {
      applied = true;
      maybe_shoot();
    });
    QObject::connect(&window, &MainWindow::became_idle, &app, maybe_shoot);
    QObject::connect(&window, &MainWindow::load_failed, &app, [&](const QString& message) {
      std::fprintf(stderr, "tilefilter-gui: %s\n", qPrintable(message));
      code = 1;
      app.quit();
    });
    QTimer::singleShot(o.timeout_s * 1000, &app, [&] {
      std::fprintf(stderr, "tilefilter-gui: the job did not finish within %d s; screenshot not taken\n", o.timeout_s);
      code = 1;
      app.quit();
    });
    app.exec();
    return code;
  }
  QObject::connect(&window, &MainWindow::image_loaded, &app, [&] { set_zoom(window.image_view(), o.zoom); });
  return app.exec();
}

}  // namespace tf::gui
