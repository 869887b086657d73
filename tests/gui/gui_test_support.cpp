#include "gui_test_support.hpp"

#include <QApplication>
#include <QPixmap>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QWidget>
#include <QtTest/QTest>

#include <fmt/format.h>

#include "platform/theme.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/filters/kernel_store.hpp"
#include "tilefilter/image/testimage.hpp"
#include "tilefilter/io/codec.hpp"
#include "window/app_runner.hpp"

namespace tf::test {

void ensure_gui_app() {
  if (QApplication::instance()) return;
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  static int argc = 1;
  static char name[] = "tf_gui_tests";
  static char* argv[] = {name, nullptr};
  tf::cuda::install_backend();
  auto* app = new QApplication(argc, argv);  // lives until the process ends
  tf::gui::set_application_identity();
  QStandardPaths::setTestModeEnabled(true);
  static QTemporaryDir scratch;
  QSettings::setDefaultFormat(QSettings::IniFormat);
  QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, scratch.path() + "/settings");
  tf::set_kernel_store_dir((scratch.path() + "/kernels").toStdString());
  tf::gui::apply_theme(*app, true);
}

bool wait_for(const std::function<bool()>& done, int timeout_ms) { return QTest::qWaitFor(done, timeout_ms); }

void save_shot(QWidget* widget, const char* name) {
  const QString dir = qEnvironmentVariable("TF_GUI_SHOTS");
  if (!dir.isEmpty()) widget->grab().save(dir + "/" + name);
}

QString write_image(const TempDir& dir, const std::string& name, int width, int height, int channels,
                    std::uint32_t seed) {
  const std::string path = dir / name;
  encode_file(path, make_test_image(width, height, Format{PixelType::U8, channels}, seed, Pattern::Photo).view());
  return QString::fromStdString(path);
}

Image core_output(const std::string& path, const std::vector<std::string>& specs, const Border& border) {
  JobOptions options;
  options.border = border;
  return filter_image(decode_file(path), parse_chain(specs), select_devices("cpu:1").devices, options);
}

std::string first_difference(const QImage& shown, const Image& expected) {
  if (shown.isNull()) return "nothing is shown";
  if (shown.width() != expected.width() || shown.height() != expected.height())
    return fmt::format("shown {}x{}, expected {}x{}", shown.width(), shown.height(), expected.width(),
                       expected.height());
  const int c = expected.format().channels;
  const QImage rgba = shown.convertToFormat(QImage::Format_RGBA8888);
  for (int y = 0; y < expected.height(); ++y) {
    const auto* e = reinterpret_cast<const unsigned char*>(expected.view().row(y));
    const uchar* s = rgba.constScanLine(y);
    for (int x = 0; x < expected.width(); ++x)
      for (int k = 0; k < c; ++k) {
        const int want = e[x * c + k];
        const int got = c == 1 ? s[x * 4] : s[x * 4 + k];
        if (want != got) return fmt::format("pixel ({}, {}) channel {}: shown {}, core {}", x, y, k, got, want);
      }
  }
  return {};
}

}  // namespace tf::test
