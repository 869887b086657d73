#include "app_options.hpp"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <cstdio>
#include <cstring>

#include "platform/app_identity.hpp"
#include "tilefilter/image/border.hpp"

namespace tf::gui {

namespace {

std::optional<QSize> parse_size(const QString& text) {
  const QStringList parts = text.toLower().split('x');
  if (parts.size() != 2) return std::nullopt;
  bool ok1 = false, ok2 = false;
  const int w = parts[0].toInt(&ok1), h = parts[1].toInt(&ok2);
  if (!ok1 || !ok2 || w < 1 || h < 1 || w > 65536 || h > 65536) return std::nullopt;
  return QSize(w, h);
}

}  // namespace

bool wants_help_only(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    for (const char* flag : {"-h", "--help", "--help-all", "-v", "--version", "-?"})
      if (std::strcmp(argv[i], flag) == 0) return true;
  return false;
}

bool choose_platform(int argc, char** argv) {
  if (!qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") || !qEnvironmentVariableIsEmpty("DISPLAY") ||
      !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
    return true;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--screenshot", 12) == 0 || std::strncmp(argv[i], "--speedup-screenshot", 20) == 0 ||
        std::strncmp(argv[i], "--bench-plot", 12) == 0) {
      qputenv("QT_QPA_PLATFORM", "offscreen");
      return true;
    }
  std::fprintf(stderr,
               "tilefilter-gui: no display (DISPLAY and WAYLAND_DISPLAY are not set). Run it in a desktop session, "
               "or without one with --screenshot FILE (or QT_QPA_PLATFORM=offscreen).\n");
  return false;
}

std::optional<AppOptions> parse_app_options(const QCoreApplication& app, int& exit_code) {
  QCommandLineParser p;
  p.setApplicationDescription(
      QStringLiteral("TileFilter: filter images with convolution kernels on every GPU of the machine (or the CPU),\n"
                     "with a live preview, a panel of what every device did, batch and a multi-GPU speedup demo.\n\n"
                     "Examples:\n"
                     "  tilefilter-gui photo.jpg --filter gaussian:sigma=3\n"
                     "  tilefilter-gui --generate 8192x8192 --filter unsharp:sigma=2,amount=1.5 --devices gpu \\\n"
                     "      --screenshot gui-gpu.png          (render the window after the job, then quit)"));
  p.addHelpOption();
  p.addVersionOption();
  p.addPositionalArgument(QStringLiteral("image"), QStringLiteral("image file to open (PNG, JPEG, BMP, TIFF, ...)"),
                          QStringLiteral("[image]"));
  const QCommandLineOption filter(
      {"f", "filter"},
      "filter SPEC: name or name:key=value,... (repeat to chain; see `tilefilter filters`), "
      "e.g. gaussian:sigma=2, sobel:dir=magnitude, custom:file=k.txt,normalize=true",
      "SPEC");
  const QCommandLineOption border(
      "border", QStringLiteral("border mode: %1 (default reflect101)").arg(QLatin1String(border_mode_names())), "MODE");
  const QCommandLineOption devices(
      "devices", "devices: all | gpu | cpu | cpu:N | GPU ordinals like 0,1 | mixes like 0,cpu:2", "SPEC");
  const QCommandLineOption generate("generate", "open a generated photo-like RGB image of this size instead of a file",
                                    "WxH");
  const QCommandLineOption preset("preset", "load a filter-chain preset (JSON)", "FILE");
  const QCommandLineOption apply("apply", "apply the chain to the image (as the Apply button) before --screenshot");
  const QCommandLineOption screenshot(
      "screenshot", "when the job has finished, save a PNG of the main window to FILE and quit", "FILE");
  const QCommandLineOption speedup("speedup-screenshot",
                                   "run the speedup demo (GPUs when there are any, else CPU workers) with the first "
                                   "--filter, save a PNG of its window to FILE and quit",
                                   "FILE");
  const QCommandLineOption zoom("zoom", "initial zoom: fit (default), 100, or a percentage", "ZOOM");
  const QCommandLineOption split("split", "position of the before/after split, 0..1 (default 0.5)", "F");
  const QCommandLineOption window("window", "window size (default 1600x1000)", "WxH");
  const QCommandLineOption light("light", "light theme instead of the dark one");
  const QCommandLineOption bench_plot(
      "bench-plot", "draw the results of `tilefilter bench --json FILE` as charts into --plot-out, then quit", "FILE");
  const QCommandLineOption plot_out("plot-out", "the PNG that --bench-plot writes", "PNG");
  const QCommandLineOption no_settings("no-settings",
                                       "neither read nor write saved settings (implied by --screenshot)");
  const QCommandLineOption timeout("timeout", "seconds to wait for the job before a screenshot gives up (default 300)",
                                   "S");
  p.addOptions({filter, border, devices, generate, preset, apply, screenshot, speedup, bench_plot, plot_out, zoom,
                split, window, light, no_settings, timeout});

  if (!p.parse(app.arguments())) {
    std::fprintf(stderr, "tilefilter-gui: %s\n(see tilefilter-gui --help)\n", qPrintable(p.errorText()));
    exit_code = 2;
    return std::nullopt;
  }
  if (p.isSet("help") || p.isSet("help-all")) {
    std::fputs(qPrintable(p.helpText()), stdout);
    exit_code = 0;
    return std::nullopt;
  }
  if (p.isSet("version")) {
    std::printf("%s %s\n", qPrintable(app.applicationName()), qPrintable(app.applicationVersion()));
    for (const char* what : {"samples", "presets"}) {
      const QString dir = data_dir(QString::fromLatin1(what));
      std::printf("%s: %s\n", what, dir.isEmpty() ? "(not installed)" : qPrintable(dir));
    }
    exit_code = 0;
    return std::nullopt;
  }
  auto usage = [&](const QString& message) {
    std::fprintf(stderr, "tilefilter-gui: %s\n", qPrintable(message));
    exit_code = 2;
    return std::nullopt;
  };
  AppOptions o;
  const QStringList positional = p.positionalArguments();
  if (positional.size() > 1) return usage(QStringLiteral("one image at a time (got %1)").arg(positional.size()));
  if (!positional.isEmpty()) o.file = positional.front();
  o.filters = p.values(filter);
  o.border = p.value(border);
  if (!o.border.isEmpty() && !parse_border_mode(o.border.toStdString()))
    return usage(QStringLiteral("--border '%1': use one of %2").arg(o.border, QLatin1String(border_mode_names())));
  o.devices = p.value(devices);
  if (p.isSet(generate)) {
    const auto s = parse_size(p.value(generate));
    if (!s) return usage(QStringLiteral("--generate '%1': expected WxH").arg(p.value(generate)));
    if (!o.file.isEmpty()) return usage(QStringLiteral("give an image file or --generate, not both"));
    o.generate = *s;
  }
  o.preset = p.value(preset);
  o.apply = p.isSet(apply);
  o.screenshot = p.value(screenshot);
  o.speedup_screenshot = p.value(speedup);
  o.bench_plot = p.value(bench_plot);
  o.plot_out = p.value(plot_out);
  if (o.bench_plot.isEmpty() != o.plot_out.isEmpty())
    return usage(QStringLiteral("--bench-plot and --plot-out go together"));
  o.zoom = p.value(zoom);
  if (p.isSet(split)) {
    bool ok = false;
    o.split = p.value(split).toDouble(&ok);
    if (!ok || o.split < 0 || o.split > 1) return usage(QStringLiteral("--split: expected a number from 0 to 1"));
  }
  if (p.isSet(window)) {
    const auto s = parse_size(p.value(window));
    if (!s) return usage(QStringLiteral("--window '%1': expected WxH").arg(p.value(window)));
    o.window = *s;
  }
  o.light = p.isSet(light);
  o.no_settings = p.isSet(no_settings) || !o.screenshot.isEmpty() || !o.speedup_screenshot.isEmpty();
  if (p.isSet(timeout)) {
    bool ok = false;
    o.timeout_s = p.value(timeout).toInt(&ok);
    if (!ok || o.timeout_s < 1) return usage(QStringLiteral("--timeout: expected seconds"));
  }
  if (o.apply && o.filters.isEmpty() && o.preset.isEmpty())
    return usage(QStringLiteral("--apply needs --filter or --preset"));
  if (!o.screenshot.isEmpty() && o.file.isEmpty() && o.generate.isEmpty())
    return usage(QStringLiteral("--screenshot needs an image (a file or --generate WxH)"));
  return o;
}

}  // namespace tf::gui
