#include "batch_dialog.hpp"

#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
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
#include <QSpinBox>
#include <QToolButton>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <QtConcurrent>
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "panels/device_choice.hpp"
#include "panels/message_bar.hpp"
#include "platform/background_priority.hpp"
#include "platform/device_hub.hpp"
#include "tilefilter/io/gpu_jpeg.hpp"
#include "tilefilter/util/error.hpp"

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

// "notes.txt (not an image)" from core's list of skipped files: the name and the reason apart.
std::pair<QString, QString> split_skipped(const std::string& entry) {
  const QString text = QString::fromStdString(entry);
  const qsizetype open = text.lastIndexOf(QStringLiteral(" ("));
  if (open <= 0 || !text.endsWith(')')) return {text, QObject::tr("Skipped")};
  QString reason = text.mid(open + 2, text.size() - open - 3);
  if (!reason.isEmpty()) reason[0] = reason[0].toUpper();
  return {text.left(open), QObject::tr("Skipped: %1").arg(reason)};
}

QString duration_text(double s) {
  if (s < 90) return QObject::tr("%1 s").arg(std::max(1, static_cast<int>(std::lround(s))));
  if (s < 5400) return QObject::tr("%1 min").arg(static_cast<int>(std::lround(s / 60)));
  return QObject::tr("%1 h %2 min").arg(static_cast<int>(s / 3600)).arg(static_cast<int>(std::fmod(s, 3600) / 60));
}

}  // namespace

BatchDialog::BatchDialog(bool use_settings, QWidget* parent) : QDialog(parent), use_settings_(use_settings) {
  setObjectName("batchDialog");
  setWindowTitle(tr("Batch — filter a folder"));
  setModal(false);
  resize(720, 640);
  auto* layout = new QVBoxLayout(this);
  messages_ = new MessageBar(this);
  layout->addWidget(messages_);

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
  for (auto m :
       {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Constant, BorderMode::Wrap})
    border_->addItem(QString::fromStdString(to_string(m)), static_cast<int>(m));
  form->addRow(tr("Border"), border_);
  auto* format_row = new QHBoxLayout;
  format_ = new QComboBox(job);
  format_->setObjectName("batchFormat");
  format_->addItem(tr("Same as input"), "same");
  format_->addItem(QStringLiteral("PNG"), "png");
  format_->addItem(QStringLiteral("JPEG"), "jpg");
  format_->addItem(QStringLiteral("TIFF"), "tiff");
  quality_ = new QSpinBox(job);
  quality_->setObjectName("batchQuality");
  quality_->setRange(1, 100);
  quality_->setValue(92);
  quality_->setPrefix(tr("quality "));
  format_row->addWidget(format_, 1);
  format_row->addWidget(quality_);
  form->addRow(tr("Output format"), format_row);
  devices_ = new DeviceChoice(job);
  devices_->setObjectName("batchDevices");
  form->addRow(tr("Devices"), devices_);
  // Where JPEGs are decoded and encoded (tilefilter batch --codec): the GPU choice only where this
  // build has a GPU JPEG codec (nvJPEG); automatic uses it where the devices include a GPU.
  codec_ = new QComboBox(job);
  codec_->setObjectName("batchCodec");
  codec_->addItem(tr("Automatic (GPU and CPU codecs)"), "auto");
  codec_->addItem(tr("CPU (libjpeg-turbo)"), "cpu");
  codec_->addItem(tr("GPU (nvJPEG)"), "gpu");
  if (!have_gpu_jpeg()) {
    codec_->setItemData(2, false, Qt::UserRole - 1);  // disabled item
    codec_->setToolTip(
        tr("This build has no GPU JPEG codec (nvJPEG was not found when it was built): JPEGs are "
           "decoded and encoded on the CPU."));
  } else {
    codec_->setToolTip(
        tr("Automatic: JPEGs go whole to the GPUs' JPEG codecs while they have room, else to the "
           "CPU threads. Progressive and CMYK JPEGs always use the CPU."));
  }
  form->addRow(tr("JPEG codec"), codec_);
  layout->addWidget(job);

  auto* run = new QGroupBox(tr("Progress"), this);
  auto* run_layout = new QVBoxLayout(run);
  progress_ = new QProgressBar(run);
  progress_->setObjectName("batchProgress");
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat(tr("%v of %m files"));
  current_ = new QLabel(tr("Not started"), run);
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
  layout->addWidget(run, 1);

  auto* buttons = new QDialogButtonBox(this);
  start_ = buttons->addButton(tr("Start"), QDialogButtonBox::AcceptRole);
  start_->setObjectName("batchStart");
  cancel_ = buttons->addButton(tr("Cancel Job"), QDialogButtonBox::RejectRole);
  cancel_->setObjectName("batchCancel");
  auto* close = buttons->addButton(QDialogButtonBox::Close);
  layout->addWidget(buttons);
  cancel_->setEnabled(false);
  connect(start_, &QPushButton::clicked, this, &BatchDialog::start);
  connect(cancel_, &QPushButton::clicked, this, &BatchDialog::cancel);
  connect(close, &QPushButton::clicked, this, &QDialog::close);
  connect(format_, &QComboBox::currentIndexChanged, this, [this] {
    const QString f = format_->currentData().toString();
    quality_->setEnabled(f == "jpg" || f == "same");
  });
  connect(&watcher_, &QFutureWatcher<Outcome>::finished, this, &BatchDialog::finished);
  // What Start would do, counted as the folders change: the same walk as the batch itself.
  connect(input_, &QLineEdit::textChanged, this, &BatchDialog::show_plan);
  connect(output_, &QLineEdit::textChanged, this, &BatchDialog::show_plan);
  connect(recursive_, &QCheckBox::toggled, this, &BatchDialog::show_plan);
  connect(format_, &QComboBox::currentIndexChanged, this, &BatchDialog::show_plan);
  pool_.setMaxThreadCount(1);

  if (use_settings_) {
    QSettings s;
    input_->setText(s.value("batch/input").toString());
    output_->setText(s.value("batch/output").toString());
    set_format(s.value("batch/format", "same").toString(), s.value("batch/quality", 92).toInt());
    set_codec(s.value("batch/codec", "auto").toString());
  }
}

void BatchDialog::set_codec(const QString& codec) {
  const int i = codec_->findData(codec);
  const bool usable = i >= 0 && (codec != QStringLiteral("gpu") || have_gpu_jpeg());
  codec_->setCurrentIndex(usable ? i : 0);
}

BatchDialog::~BatchDialog() {
  cancel();
  watcher_.waitForFinished();
}

void BatchDialog::set_chain(const ChainSettings& chain) {
  if (running()) return;
  try {
    chain_->setPlainText(QString::fromStdString(fmt::format("{}", fmt::join(to_specs(chain.filters), "\n"))));
  } catch (const Error& e) {
    messages_->show_message(MessageBar::Level::Error, QString::fromUtf8(e.what()));
  }
  border_->setCurrentIndex(border_->findData(static_cast<int>(chain.border.mode)));
}

void BatchDialog::set_devices(const QString& spec) { devices_->set_spec(spec); }

void BatchDialog::set_folders(const QString& input, const QString& output) {
  input_->setText(input);
  output_->setText(output);
}

void BatchDialog::suggest_input(const QString& dir) {
  if (input_->text().isEmpty()) input_->setText(dir);
}

void BatchDialog::set_format(const QString& format, int quality) {
  const int i = format_->findData(format);
  format_->setCurrentIndex(i >= 0 ? i : 0);
  quality_->setValue(quality);
}

BatchOptions BatchDialog::options() const {
  BatchOptions o;
  o.input_dir = QDir::cleanPath(input_->text().trimmed()).toStdString();
  o.output_dir = QDir::cleanPath(output_->text().trimmed()).toStdString();
  if (input_->text().trimmed().isEmpty()) throw Error(ErrorKind::InvalidArgument, "choose an input folder");
  if (output_->text().trimmed().isEmpty()) throw Error(ErrorKind::InvalidArgument, "choose an output folder");
  for (const QString& line : chain_->toPlainText().split('\n', Qt::SkipEmptyParts))
    if (!line.trimmed().isEmpty()) o.filters.push_back(line.trimmed().toStdString());
  parse_chain(o.filters);  // core's messages for a bad spec, before anything starts
  o.recursive = recursive_->isChecked();
  o.format = format_->currentData().toString().toStdString();
  o.quality = quality_->value();
  o.devices = devices_->spec().toStdString();
  o.codec = parse_codec_choice(codec_->currentData().toString().toStdString());
  o.job.border.mode = static_cast<BorderMode>(border_->currentData().toInt());
  return o;
}

void BatchDialog::show_plan() {
  if (running()) return;
  const QString in = input_->text().trimmed();
  BatchOptions o;
  o.input_dir = QDir::cleanPath(in).toStdString();
  // Without an output folder yet, count as if it were beside the input (the walk does not need it).
  const QString out = output_->text().trimmed();
  o.output_dir = QDir::cleanPath(out.isEmpty() ? in + QStringLiteral(".filtered") : out).toStdString();
  o.recursive = recursive_->isChecked();
  o.format = format_->currentData().toString().toStdString();
  int files = 0;
  QString text = tr("Not started");
  if (!in.isEmpty()) {
    try {
      const BatchPlan plan = plan_batch(o);
      files = static_cast<int>(plan.items.size());
      const int skipped = static_cast<int>(plan.skipped.size());
      text = files == 1 ? tr("1 image to filter")
             : files    ? tr("%1 images to filter").arg(files)
                        : tr("No images in this folder");
      if (skipped) text += skipped == 1 ? tr(", 1 other file skipped") : tr(", %1 other files skipped").arg(skipped);
    } catch (const Error& e) {
      text = QString::fromUtf8(e.what());
    }
  }
  progress_->setRange(0, std::max(1, files));
  progress_->setValue(0);
  progress_->setFormat(files ? tr("%v of %m files") : tr("no files"));
  current_->setText(text);
}

void BatchDialog::start() {
  if (running()) return;
  messages_->hide();
  BatchOptions o;
  try {
    o = options();
  } catch (const Error& e) {
    messages_->show_message(MessageBar::Level::Error, QString::fromUtf8(e.what()));
    emit batch_finished(false);
    return;
  }
  if (use_settings_) {
    QSettings s;
    s.setValue("batch/input", input_->text());
    s.setValue("batch/output", output_->text());
    s.setValue("batch/format", format_->currentData());
    s.setValue("batch/quality", quality_->value());
    s.setValue("batch/codec", codec_->currentData());
  }
  cancel_flag_ = std::make_shared<std::atomic<bool>>(false);
  shared_ = std::make_shared<Shared>();
  o.cancel = cancel_flag_.get();
  // Progress comes from the batch's threads: keep the newest and post one update at a time.
  o.progress = [this, shared = shared_](const BatchProgress& p) {
    std::lock_guard lock(shared->mutex);
    shared->latest = p;
    if (shared->posted) return;
    shared->posted = true;
    QMetaObject::invokeMethod(this, &BatchDialog::show_progress, Qt::QueuedConnection);
  };
  failed_->clear();
  summary_->clear();
  progress_->setRange(0, 0);
  progress_->setFormat(tr("%v of %m files"));
  current_->setText(tr("Starting…"));
  set_running(true);
  watcher_.setFuture(QtConcurrent::run(&pool_, [o, cancel = cancel_flag_]() -> Outcome {
    Outcome out;
    lower_thread_priority();  // the batch's decode, filter and encode threads inherit it
    try {
      auto& hub = DeviceHub::instance();
      std::lock_guard devices(hub.job_mutex());
      // The devices this process already has (the hub's: GPUs started once, at launch), not a second
      // discovery; while the GPUs are still starting, "all" takes the CPU workers as a preview does.
      BatchOptions run = o;
      run.device_list = hub.select(o.devices).devices;
      out.report = run_batch(run);
    } catch (const std::bad_alloc&) {
      out.error = tr("Out of memory during the batch.");
    } catch (const std::exception& e) {
      out.error = QString::fromUtf8(e.what());
    }
    return out;
  }));
}

void BatchDialog::cancel() {
  if (cancel_flag_) cancel_flag_->store(true);
  if (running()) current_->setText(tr("Cancelling — files in flight finish first…"));
}

void BatchDialog::show_progress() {
  if (!shared_) return;
  BatchProgress p;
  {
    std::lock_guard lock(shared_->mutex);
    p = shared_->latest;
    shared_->posted = false;
  }
  progress_->setRange(0, std::max(1, p.files_total));
  progress_->setValue(p.files_done + p.files_failed);
  QStringList names;
  for (const auto& f : p.current) names << QFileInfo(QString::fromStdString(f)).fileName();
  // Rate from the work done so far; time left from the input bytes still to go (files differ in size).
  QString rate;
  if (p.elapsed_s > 0 && p.files_done > 0) {
    rate = tr(" · %1 files/s, %2 Mpix/s")
               .arg(p.files_done / p.elapsed_s, 0, 'f', 1)
               .arg(p.megapixels_done / p.elapsed_s, 0, 'f', 1);
    const double fraction = p.bytes_total ? static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total)
                                          : static_cast<double>(p.files_done) / std::max(1, p.files_total);
    if (fraction > 0 && fraction < 1)
      rate += tr(" · about %1 left").arg(duration_text(p.elapsed_s * (1 / fraction - 1)));
  }
  if (p.cancelling)  // the files already started finish; no time left to promise
    rate = p.files_in_flight == 1 ? tr(" · cancelling, 1 file in flight finishes first")
                                  : tr(" · cancelling, %1 files in flight finish first").arg(p.files_in_flight);
  current_->setText(tr("%1 done, %2 failed · %3 Mpix in %4 s%5%6")
                        .arg(p.files_done)
                        .arg(p.files_failed)
                        .arg(p.megapixels_done, 0, 'f', 1)
                        .arg(p.elapsed_s, 0, 'f', 1)
                        .arg(rate)
                        .arg(names.isEmpty() ? QString() : tr(" · now: %1").arg(names.join(QStringLiteral(", ")))));
}

void BatchDialog::finished() {
  set_running(false);
  const Outcome out = watcher_.result();
  if (!out.error.isEmpty()) {
    progress_->setRange(0, 1);
    progress_->setValue(0);
    current_->setText(tr("Not run"));
    messages_->show_message(MessageBar::Level::Error, out.error);
    emit batch_finished(false);
    return;
  }
  const BatchReport& r = out.report;
  int ok = 0, failed = 0, resumed = 0, cancelled = 0;
  for (const auto& f : r.files) {
    switch (f.status) {
      case FileResult::Status::Ok: ++ok; break;
      case FileResult::Status::Failed: ++failed; break;
      case FileResult::Status::Resumed: ++resumed; break;
      case FileResult::Status::Cancelled: ++cancelled; break;
    }
    if (f.status == FileResult::Status::Failed) {
      const QString input = QString::fromStdString(f.input);
      auto* item =
          new QTreeWidgetItem({QDir(input_->text()).relativeFilePath(input), QString::fromStdString(f.reason)});
      item->setToolTip(0, input);
      item->setToolTip(1, QString::fromStdString(f.reason));
      failed_->addTopLevelItem(item);
    }
  }
  for (const auto& s : r.skipped) {
    const auto [name, reason] = split_skipped(s);
    failed_->addTopLevelItem(new QTreeWidgetItem({name, reason}));
  }
  const int total = static_cast<int>(r.files.size());
  progress_->setRange(0, std::max(1, total));
  progress_->setValue(total - cancelled);
  current_->setText(r.cancelled ? tr("Cancelled") : tr("Finished"));
  summary_->setText(
      tr("%1 files: %2 written, %3 failed%4%5 · %6 Mpix in %7 s (decode %8 s, encode %9 s of thread time)")
          .arg(total)
          .arg(ok)
          .arg(failed)
          .arg(resumed ? tr(", %1 already done").arg(resumed) : QString())
          .arg(cancelled ? tr(", %1 cancelled").arg(cancelled) : QString())
          .arg(r.megapixels, 0, 'f', 1)
          .arg(r.wall_s, 0, 'f', 2)
          .arg(r.decode_s, 0, 'f', 2)
          .arg(r.encode_s, 0, 'f', 2));
  if (r.gpu_codec_lanes > 0)
    summary_->setText(summary_->text() + tr(" · %1 JPEGs decoded on the GPU").arg(gpu_codec_counts(r).decoded));
  if (failed)
    messages_->show_message(MessageBar::Level::Warning,
                            tr("%1 of %2 files failed; the list below says why.").arg(failed).arg(total));
  emit job_finished(job_view(r, tr("Batch %1 → %2 · %3 files").arg(input_->text(), output_->text()).arg(total)));
  emit batch_finished(true);
}

void BatchDialog::set_running(bool running) {
  start_->setEnabled(!running);
  cancel_->setEnabled(running);
  for (QWidget* w : {static_cast<QWidget*>(input_), static_cast<QWidget*>(output_), static_cast<QWidget*>(chain_),
                     static_cast<QWidget*>(format_), static_cast<QWidget*>(quality_), static_cast<QWidget*>(devices_),
                     static_cast<QWidget*>(recursive_), static_cast<QWidget*>(border_), static_cast<QWidget*>(codec_)})
    w->setEnabled(!running);
  if (!running) quality_->setEnabled(format_->currentData() == "jpg" || format_->currentData() == "same");
}

QStringList BatchDialog::failed_files() const {
  QStringList out;
  for (int i = 0; i < failed_->topLevelItemCount(); ++i)
    out << failed_->topLevelItem(i)->text(0) + QStringLiteral(": ") + failed_->topLevelItem(i)->text(1);
  return out;
}

QString BatchDialog::summary_text() const { return summary_->text(); }
QString BatchDialog::status_text() const { return current_->text(); }
QString BatchDialog::progress_text() const { return progress_->text(); }
QString BatchDialog::error_text() const { return messages_->text(); }
int BatchDialog::progress_value() const { return progress_->value(); }
int BatchDialog::progress_maximum() const { return progress_->maximum(); }

void BatchDialog::closeEvent(QCloseEvent* e) {
  if (running()) {
    cancel();
    messages_->show_message(MessageBar::Level::Info,
                            tr("Cancelling the running batch; close again when it has stopped."));
    e->ignore();
    return;
  }
  QDialog::closeEvent(e);
}

}  // namespace tf::gui
