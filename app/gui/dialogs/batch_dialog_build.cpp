// The batch dialog's widgets: the job (folders, chain, border, format, devices, codec), the progress
// and the buttons. batch_dialog.cpp runs the job.
#include <QCheckBox>
#include <QComboBox>
#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QToolButton>
#include <QTreeWidget>
#include <QUrl>
#include <QVBoxLayout>

#include "batch_dialog.hpp"
#include "panels/device_choice.hpp"
#include "panels/filter_panel.hpp"
#include "panels/message_bar.hpp"
#include "platform/device_hub.hpp"
#include "save_options_dialog.hpp"
#include "tilefilter/io/gpu_jpeg.hpp"
#include "tilefilter/io/io.hpp"

namespace tf::gui {

namespace {

QWidget* folder_row(QWidget* parent, QLineEdit* edit, const QString& title) {
  auto* w = new QWidget(parent);
  auto* row = new QHBoxLayout(w);
  row->setContentsMargins(0, 0, 0, 0);
  auto* browse = new QToolButton(w);
  browse->setText(QObject::tr("Browse…"));
  row->addWidget(edit, 1);
  row->addWidget(browse);
  QObject::connect(browse, &QToolButton::clicked, w, [edit, title, w] {
    const QString dir = QFileDialog::getExistingDirectory(w, title, edit->text());
    if (!dir.isEmpty()) edit->setText(dir);
  });
  return w;
}

}  // namespace

BatchDialog::BatchDialog(bool use_settings, QWidget* parent) : QDialog(parent), use_settings_(use_settings) {
  setObjectName("batchDialog");
  setWindowTitle(tr("Batch — filter a folder"));
  setModal(false);
  resize(720, 660);
  auto* layout = new QVBoxLayout(this);
  messages_ = new MessageBar(this);
  layout->addWidget(messages_);
  layout->addWidget(build_job_box());
  layout->addWidget(build_progress_box(), 1);
  layout->addWidget(build_buttons());
  connect(&watcher_, &QFutureWatcher<Outcome>::finished, this, &BatchDialog::finished);
  // What Start would do, counted as the folders change: the same walk as the batch itself.
  connect(input_, &QLineEdit::textChanged, this, &BatchDialog::show_plan);
  connect(output_, &QLineEdit::textChanged, this, &BatchDialog::show_plan);
  connect(recursive_, &QCheckBox::toggled, this, &BatchDialog::show_plan);
  connect(format_, &QComboBox::currentIndexChanged, this, &BatchDialog::show_plan);
  pool_.setMaxThreadCount(1);

  const BatchOptions defaults;  // the CLI's defaults: `tilefilter batch` without options
  set_format(QString::fromStdString(defaults.format), {defaults.quality, defaults.subsampling});
  if (use_settings_) {
    QSettings s;
    input_->setText(s.value("batch/input").toString());
    output_->setText(s.value("batch/output").toString());
    set_format(
        s.value("batch/format", QString::fromStdString(defaults.format)).toString(),
        {s.value("batch/quality", defaults.quality).toInt(),
         static_cast<ChromaSubsampling>(s.value("batch/subsampling", static_cast<int>(defaults.subsampling)).toInt())});
    set_codec(s.value("batch/codec", "auto").toString());
  }
  show_plan();
}

QGroupBox* BatchDialog::build_job_box() {
  auto* job = new QGroupBox(tr("Job"), this);
  auto* form = new QFormLayout(job);
  input_ = new QLineEdit(job);
  input_->setObjectName("batchInput");
  output_ = new QLineEdit(job);
  output_->setObjectName("batchOutput");
  form->addRow(tr("Input folder"), folder_row(job, input_, tr("Input folder")));
  recursive_ = new QCheckBox(tr("Include sub-folders"), job);
  form->addRow(QString(), recursive_);
  form->addRow(tr("Output folder"), folder_row(job, output_, tr("Output folder")));
  chain_ = new QPlainTextEdit(job);
  chain_->setObjectName("batchChain");
  chain_->setPlaceholderText(tr("one filter spec per line, e.g. gaussian:sigma=2"));
  chain_->setMaximumHeight(80);
  chain_->setToolTip(tr("Taken from the filter panel; edit freely (same syntax as tilefilter --filter)"));
  form->addRow(tr("Filters"), chain_);
  border_ = new QComboBox(job);
  border_->setObjectName("batchBorder");
  add_border_modes(border_);
  form->addRow(tr("Border"), border_);
  form->addRow(tr("Output format"), build_format_row(job));
  devices_ = new DeviceChoice(job);
  devices_->setObjectName("batchDevices");
  form->addRow(tr("Devices"), devices_);
  codec_ = new QComboBox(job);
  codec_->setObjectName("batchCodec");
  list_codecs();
  // The GPUs may be found after the dialog opens: then the GPU codec choices come.
  connect(&DeviceHub::instance(), &DeviceHub::discovery_finished, this, &BatchDialog::list_codecs,
          Qt::QueuedConnection);
  form->addRow(tr("JPEG codec"), codec_);
  return job;
}

QHBoxLayout* BatchDialog::build_format_row(QWidget* parent) {
  auto* row = new QHBoxLayout;
  format_ = new QComboBox(parent);
  format_->setObjectName("batchFormat");
  format_->addItem(tr("Same as input"), "same");
  format_->addItem(QStringLiteral("PNG"), "png");
  format_->addItem(QStringLiteral("JPEG"), "jpg");
  format_->addItem(QStringLiteral("TIFF"), "tiff");
  quality_ = new QSpinBox(parent);
  quality_->setObjectName("batchQuality");
  quality_->setRange(0, 100);
  quality_->setPrefix(tr("quality "));
  quality_->setSpecialValueText(tr("quality as input"));
  quality_->setToolTip(tr("JPEG quality, as tilefilter batch --quality; as input: each JPEG's own (from its "
                          "quantisation tables), %1 for other images")
                           .arg(kDefaultQuality));
  subsampling_ = new QComboBox(parent);
  subsampling_->setObjectName("batchSubsampling");
  add_subsampling_choices(subsampling_);
  row->addWidget(format_, 1);
  row->addWidget(quality_);
  row->addWidget(new QLabel(tr("chroma"), parent));
  row->addWidget(subsampling_);
  connect(format_, &QComboBox::currentIndexChanged, this, [this] { enable_jpeg_choices(); });
  return row;
}

void BatchDialog::list_codecs() {
  // Where JPEGs are decoded and encoded (tilefilter batch --codec): only the codecs this machine has.
  // Without a GPU codec in the build, or without a GPU, that is the CPU's alone.
  const QString current = codec_->currentData().toString();
  const bool gpu = have_gpu_jpeg() && !DeviceHub::instance().gpus().empty();
  const QSignalBlocker block(codec_);
  codec_->clear();
  if (gpu) codec_->addItem(tr("Automatic (GPU and CPU codecs)"), "auto");
  codec_->addItem(tr("CPU (libjpeg-turbo)"), "cpu");
  if (gpu) codec_->addItem(tr("GPU (nvJPEG)"), "gpu");
  codec_->setEnabled(codec_->count() > 1 && !running());
  codec_->setToolTip(gpu ? tr("Automatic: the CPU threads decode JPEGs while the GPUs' JPEG codecs start, then "
                              "they go whole to the GPUs. Progressive and CMYK JPEGs always use the CPU.")
                     : have_gpu_jpeg() ? tr("No GPU here: JPEGs are decoded and encoded on the CPU.")
                                       : tr("This build has no GPU JPEG codec (nvJPEG was not found when it "
                                            "was built): JPEGs are decoded and encoded on the CPU."));
  set_codec(current.isEmpty() ? QStringLiteral("auto") : current);
}

QGroupBox* BatchDialog::build_progress_box() {
  auto* run = new QGroupBox(tr("Progress"), this);
  auto* run_layout = new QVBoxLayout(run);
  progress_ = new QProgressBar(run);
  progress_->setObjectName("batchProgress");
  current_ = new QLabel(run);
  current_->setObjectName("batchCurrent");
  current_->setWordWrap(true);
  summary_ = new QLabel(run);
  summary_->setObjectName("batchSummary");
  summary_->setWordWrap(true);
  failed_ = new QTreeWidget(run);
  failed_->setObjectName("batchFailed");
  failed_->setHeaderLabels({tr("File"), tr("Problem")});
  failed_->setRootIsDecorated(false);
  failed_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  run_layout->addWidget(progress_);
  run_layout->addWidget(current_);
  run_layout->addWidget(summary_);
  run_layout->addWidget(new QLabel(tr("Failed or skipped files:"), run));
  run_layout->addWidget(failed_, 1);
  return run;
}

QDialogButtonBox* BatchDialog::build_buttons() {
  auto* buttons = new QDialogButtonBox(this);
  start_ = buttons->addButton(tr("Start"), QDialogButtonBox::AcceptRole);
  start_->setObjectName("batchStart");
  cancel_ = buttons->addButton(tr("Cancel Job"), QDialogButtonBox::RejectRole);
  cancel_->setObjectName("batchCancel");
  open_output_ = buttons->addButton(tr("Open Output Folder"), QDialogButtonBox::ActionRole);
  open_output_->setObjectName("batchOpenOutput");
  open_output_->setEnabled(false);  // and hidden until a run has written something
  open_output_->hide();
  auto* close = buttons->addButton(QDialogButtonBox::Close);
  cancel_->setEnabled(false);
  connect(start_, &QPushButton::clicked, this, &BatchDialog::start);
  connect(cancel_, &QPushButton::clicked, this, &BatchDialog::cancel);
  connect(open_output_, &QPushButton::clicked, this,
          [this] { QDesktopServices::openUrl(QUrl::fromLocalFile(last_output_)); });
  connect(close, &QPushButton::clicked, this, &QDialog::close);
  return buttons;
}

}  // namespace tf::gui
