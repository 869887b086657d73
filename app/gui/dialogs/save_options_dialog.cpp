#include "save_options_dialog.hpp"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>

#include "tilefilter/io/codec.hpp"

namespace tf::gui {

QList<QPair<QString, QString>> SaveOptionsDialog::formats() {
  QList<QPair<QString, QString>> out = {{"png", tr("PNG (lossless)")}, {"jpg", tr("JPEG")}, {"bmp", tr("BMP")}};
  if (have_opencv_codecs()) out += {{"tif", tr("TIFF (16-bit and float too)")}, {"webp", tr("WebP")}};
  return out;
}

SaveOptionsDialog::SaveOptionsDialog(const QString& suggested, const Format& format, int quality, QWidget* parent)
    : QDialog(parent), format_(format) {
  setWindowTitle(tr("Save As"));
  setObjectName("saveOptionsDialog");
  auto* form = new QFormLayout(this);
  auto* row = new QHBoxLayout;
  path_ = new QLineEdit(suggested, this);
  path_->setObjectName("savePath");
  path_->setMinimumWidth(380);
  auto* browse = new QPushButton(tr("Browse…"), this);
  row->addWidget(path_, 1);
  row->addWidget(browse);
  form->addRow(tr("File"), row);
  type_ = new QComboBox(this);
  type_->setObjectName("saveFormat");
  for (const auto& [ext, label] : formats()) type_->addItem(label, ext);
  form->addRow(tr("Format"), type_);
  quality_ = new QSpinBox(this);
  quality_->setObjectName("saveQuality");
  quality_->setRange(1, 100);
  quality_->setValue(quality);
  quality_->setSuffix(QStringLiteral(" %"));
  form->addRow(tr("Quality"), quality_);
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  form->addRow(note_);
  buttons_ = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel, this);
  form->addRow(buttons_);

  const QString ext = QFileInfo(suggested).suffix().toLower();
  const int i = type_->findData(ext == "jpeg" ? QStringLiteral("jpg") : ext == "tiff" ? QStringLiteral("tif") : ext);
  type_->setCurrentIndex(i >= 0 ? i : 0);

  connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getSaveFileName(this, tr("Save As"), path_->text());
    if (!f.isEmpty()) path_->setText(f);
  });
  connect(type_, &QComboBox::currentIndexChanged, this, [this] {
    // The extension follows the chosen format.
    QFileInfo fi(path_->text());
    const QString base = fi.path() + QLatin1Char('/') + fi.completeBaseName();
    path_->setText(base + QLatin1Char('.') + type_->currentData().toString());
    update_state();
  });
  connect(path_, &QLineEdit::textChanged, this, &SaveOptionsDialog::update_state);
  update_state();
}

QString SaveOptionsDialog::path() const { return path_->text().trimmed(); }
int SaveOptionsDialog::quality() const { return quality_->value(); }

void SaveOptionsDialog::update_state() {
  const QString ext = QFileInfo(path()).suffix().toLower();
  // The format list follows a typed extension (as GIMP's Export As does); an unknown one leaves it.
  const int typed = type_->findData(ext == "jpeg"   ? QStringLiteral("jpg")
                                    : ext == "tiff" ? QStringLiteral("tif")
                                                    : ext);
  if (typed >= 0 && typed != type_->currentIndex()) {
    const QSignalBlocker block(type_);
    type_->setCurrentIndex(typed);
  }
  quality_->setEnabled(ext == "jpg" || ext == "jpeg" || ext == "webp");
  std::string why;
  const bool ok = !path().isEmpty() && can_encode(path().toStdString(), format_, &why);
  note_->setText(ok ? QString() : QString::fromStdString(why.empty() ? "choose a file name" : why));
  buttons_->button(QDialogButtonBox::Save)->setEnabled(ok);
}

}  // namespace tf::gui
