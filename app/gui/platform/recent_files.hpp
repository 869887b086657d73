// The File ▸ Open Recent menu, kept in QSettings ("recent"), newest first, missing files dropped.
#pragma once
#include <QMenu>
#include <QStringList>

namespace tf::gui {

class RecentFiles : public QObject {
  Q_OBJECT
 public:
  RecentFiles(QMenu* menu, QObject* parent = nullptr);
  void add(const QString& path);
  QStringList files() const;
  static constexpr int kMax = 10;

 signals:
  void open_requested(const QString& path);

 private:
  void rebuild();
  QMenu* menu_;
};

}  // namespace tf::gui
