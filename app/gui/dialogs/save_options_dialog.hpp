// Save As: where, which format (from the extensions the codecs can write; the list follows a typed
// extension) and, for JPEG/WebP, the quality and, for JPEG, the chroma subsampling — "Same as input"
// for both unless chosen, as the CLI does. Refuses formats that cannot hold the image (core's
// can_encode says why).
#pragma once
#include <QDialog>

#include "model/document.hpp"
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
  SaveOptionsDialog(const QString& suggested_path, const Format& format, const JpegChoice& jpeg = {},
                    QWidget* parent = nullptr);
  QString path() const;
  JpegChoice jpeg() const;

  // The formats offered: extension (no dot) -> label.
  static QList<QPair<QString, QString>> formats();

 private:
  void update_state();
  Format format_;
  QLineEdit* path_ = nullptr;
  QComboBox* type_ = nullptr;
  QSpinBox* quality_ = nullptr;  // 0 = same as input
  QComboBox* subsampling_ = nullptr;
  QLabel* note_ = nullptr;
  QDialogButtonBox* buttons_ = nullptr;
};

// "Same as input", 4:4:4, 4:2:2, 4:2:0, each with its ChromaSubsampling as int data (Save As, batch).
void add_subsampling_choices(QComboBox* box);

}  // namespace tf::gui
