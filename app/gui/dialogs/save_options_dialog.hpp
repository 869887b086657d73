// Save As: where, which format (from the extensions the codecs can write) and, for JPEG/WebP, the
// quality. Refuses formats that cannot hold the image (core's can_encode says why).
#pragma once
#include <QDialog>

#include "tilefilter/image/image.hpp"

class QLineEdit;
class QComboBox;
class QSpinBox;
class QLabel;
class QDialogButtonBox;

namespace tf::gui {

class SaveOptionsDialog : public QDialog {
  Q_OBJECT
 public:
  SaveOptionsDialog(const QString& suggested_path, const Format& format, int quality, QWidget* parent = nullptr);
  QString path() const;
  int quality() const;

  // The formats offered: extension (no dot) -> label.
  static QList<QPair<QString, QString>> formats();

 private:
  void update_state();
  Format format_;
  QLineEdit* path_ = nullptr;
  QComboBox* type_ = nullptr;
  QSpinBox* quality_ = nullptr;
  QLabel* note_ = nullptr;
  QDialogButtonBox* buttons_ = nullptr;
};

}  // namespace tf::gui
