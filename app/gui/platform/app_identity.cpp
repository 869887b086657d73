#include "app_identity.hpp"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QGuiApplication>
#include <QPixmap>
#include <QString>
#include <QWidget>
#include <cstdio>

#ifndef TF_VERSION
#define TF_VERSION "0.0.0"
#endif
#ifndef TF_SOURCE_RESOURCES
#define TF_SOURCE_RESOURCES ""
#endif

// The resources live in a static library, whose initializers are not linked in unless something
// refers to them; hence the explicit call, outside any namespace as Qt requires.
static void init_tilefilter_resources() { Q_INIT_RESOURCE(tilefilter); }

namespace tf::gui {

void init_resources() {
  static const bool done = (init_tilefilter_resources(), true);
  (void)done;
}

void set_application_identity() {
  QCoreApplication::setOrganizationName(QStringLiteral("TileFilter"));
  QCoreApplication::setApplicationName(QStringLiteral("tilefilter-gui"));
  QCoreApplication::setApplicationVersion(QStringLiteral(TF_VERSION));
  QGuiApplication::setApplicationDisplayName(QStringLiteral("TileFilter"));
  QGuiApplication::setDesktopFileName(QStringLiteral("tilefilter-gui"));
}

QString data_dir(const QString& what) {
  const QString installed = QCoreApplication::applicationDirPath() + "/../share/tilefilter/" + what;
  for (const QString& c : {installed, QStringLiteral(TF_SOURCE_RESOURCES "/") + what})
    if (QFileInfo(c).isDir()) return QDir(c).canonicalPath();
  return {};
}

bool save_screenshot(QWidget* widget, const QString& path) {
  const QPixmap shot = widget->grab();
  const QString dir = QFileInfo(path).absolutePath();
  // PNG quality 0 = strongest zlib compression: screenshots go into the repository.
  if (!QDir().mkpath(dir) || !shot.save(path, "PNG", 0)) {
    std::fprintf(stderr, "tilefilter-gui: cannot write screenshot %s\n", qPrintable(path));
    return false;
  }
  std::printf("tilefilter-gui: screenshot %dx%d written to %s\n", shot.width(), shot.height(), qPrintable(path));
  return true;
}

}  // namespace tf::gui
