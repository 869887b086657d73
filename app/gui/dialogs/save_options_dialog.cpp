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
#include "tilefilter/io/io.hpp"

namespace tf::gui {

QList<QPair<QString, QString>> SaveOptionsDialog::formats() {
  QList<QPair<QString, QString>> out = {{"png", tr("PNG (lossless)")}, {"jpg", tr("JPEG")}, {"bmp", tr("BMP")}};
  if (have_opencv_codecs()) out += {{"tif", tr("TIFF (16-bit and float too)")}, {"webp", tr("WebP")}};
  return out;
}

SaveOptionsDialog::SaveOptionsDialog(const QString& suggested, const Format& format, const JpegChoice& jpeg,
                                     QWidget* parent)
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
  quality_->setRange(0, 100);
  quality_->setSpecialValueText(tr("Same as input"));
  quality_->setValue(jpeg.quality);
  quality_->setToolTip(tr("Same as input: a JPEG's own quality (from its quantisation tables), %1 for other "
                          "images — as tilefilter apply without --quality")
                           .arg(kDefaultQuality));
  form->addRow(tr("Quality"), quality_);
  subsampling_ = new QComboBox(this);
  subsampling_->setObjectName("saveSubsampling");
  add_subsampling_choices(subsampling_);
  subsampling_->setCurrentIndex(subsampling_->findData(static_cast<int>(jpeg.subsampling)));
  form->addRow(tr("Chroma subsampling"), subsampling_);
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
JpegChoice SaveOptionsDialog::jpeg() const {
  return {quality_->value(), static_cast<ChromaSubsampling>(subsampling_->currentData().toInt())};
}

void add_subsampling_choices(QComboBox* box) {
  box->addItem(QObject::tr("Same as input"), static_cast<int>(ChromaSubsampling::FromInput));
  for (auto s : {ChromaSubsampling::S444, ChromaSubsampling::S422, ChromaSubsampling::S420})
    box->addItem(QString::fromLatin1(to_string(s)), static_cast<int>(s));
  box->setToolTip(
      QObject::tr("JPEG chroma subsampling. Same as input: a JPEG's own; for other images 4:4:4 from "
                  "quality 90, 4:2:0 below — as tilefilter --subsampling"));
}

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
  subsampling_->setEnabled(ext == "jpg" || ext == "jpeg");
  std::string why;
  const bool ok = !path().isEmpty() && can_encode(path().toStdString(), format_, &why);
  note_->setText(ok ? QString() : QString::fromStdString(why.empty() ? "choose a file name" : why));
  buttons_->button(QDialogButtonBox::Save)->setEnabled(ok);
}

}  // namespace tf::gui
