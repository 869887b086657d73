// Messages inside the window, above the image (like KDE's KMessageWidget): errors such as an
// unreadable file, a GPU failure or running out of memory are told here, never by dying.
#pragma once
#include <QFrame>

class QLabel;
class QTimer;

namespace tf::gui {

class MessageBar : public QFrame {
  Q_OBJECT
 public:
  enum class Level { Info, Warning, Error };
  explicit MessageBar(QWidget* parent = nullptr);
  void show_message(Level level, const QString& text, int timeout_ms = 0);  // 0 = until closed
  QString text() const;
  Level level() const { return level_; }

 private:
  QLabel* icon_ = nullptr;
  QLabel* text_ = nullptr;
  QTimer* timer_ = nullptr;
  Level level_ = Level::Info;
};

}  // namespace tf::gui
