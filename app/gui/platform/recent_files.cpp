#include "recent_files.hpp"

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace tf::gui {

RecentFiles::RecentFiles(QMenu* menu, QObject* parent) : QObject(parent), menu_(menu) { rebuild(); }

QStringList RecentFiles::files() const {
  QStringList out;
  for (const QString& f : QSettings().value("recent").toStringList())
    if (QFileInfo::exists(f)) out << f;
  return out;
}

void RecentFiles::add(const QString& path) {
  const QString abs = QFileInfo(path).absoluteFilePath();
  QStringList list = files();
  list.removeAll(abs);
  list.prepend(abs);
  while (list.size() > kMax) list.removeLast();
  QSettings().setValue("recent", list);
  rebuild();
}

void RecentFiles::rebuild() {
  menu_->clear();
  const QStringList list = files();
  int n = 0;
  for (const QString& f : list) {
    QAction* a = menu_->addAction(QStringLiteral("&%1 %2").arg(++n % 10).arg(QFileInfo(f).fileName()));
    a->setToolTip(QDir::toNativeSeparators(f));
    a->setStatusTip(QDir::toNativeSeparators(f));
    connect(a, &QAction::triggered, this, [this, f] { emit open_requested(f); });
  }
  if (list.isEmpty()) menu_->addAction(tr("(no recent files)"))->setEnabled(false);
  else {
    menu_->addSeparator();
    menu_->addAction(tr("Clear list"), this, [this] {
      QSettings().remove("recent");
      rebuild();
    });
  }
}

}  // namespace tf::gui
