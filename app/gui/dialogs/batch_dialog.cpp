#include "batch_dialog.hpp"

#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTreeWidget>
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

void BatchDialog::set_codec(const QString& codec) {
  const int i = codec_->findData(codec);  // only the codecs present are listed
  codec_->setCurrentIndex(i >= 0 ? i : 0);
}

QStringList BatchDialog::codec_choices() const {
  QStringList out;
  for (int i = 0; i < codec_->count(); ++i) out << codec_->itemData(i).toString();
  return out;
}

bool BatchDialog::can_open_output() const { return open_output_->isEnabled(); }

BatchDialog::Existing BatchDialog::ask_existing(int count) {
  if (choose_existing_) return choose_existing_(count);
  QMessageBox box(QMessageBox::Question, tr("Outputs already there"),
                  (count == 1 ? tr("1 file in %1 would be written over.").arg(output_->text())
                              : tr("%1 files in %2 would be written over.").arg(count).arg(output_->text())),
                  QMessageBox::NoButton, this);
  box.setInformativeText(
      tr("Resume keeps the outputs that are complete and newer than their input and filters the "
         "rest (tilefilter batch --resume); Overwrite filters every file again."));
  QPushButton* resume = box.addButton(tr("Resume"), QMessageBox::AcceptRole);
  QPushButton* overwrite = box.addButton(tr("Overwrite"), QMessageBox::DestructiveRole);
  box.addButton(QMessageBox::Cancel);
  box.setDefaultButton(resume);
  box.exec();
  if (box.clickedButton() == resume) return Existing::Resume;
  if (box.clickedButton() == overwrite) return Existing::Overwrite;
  return Existing::Cancel;
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
  border_value_ = chain.border.value;  // the constant border's value comes with the chain
}

void BatchDialog::set_devices(const QString& spec) { devices_->set_spec(spec); }

void BatchDialog::set_folders(const QString& input, const QString& output) {
  input_->setText(input);
  output_->setText(output);
}

void BatchDialog::suggest_input(const QString& dir) {
  if (input_->text().isEmpty()) input_->setText(dir);
}

void BatchDialog::set_format(const QString& format, const JpegChoice& jpeg) {
  const int i = format_->findData(format);
  format_->setCurrentIndex(i >= 0 ? i : 0);
  quality_->setValue(jpeg.quality);
  const int s = subsampling_->findData(static_cast<int>(jpeg.subsampling));
  subsampling_->setCurrentIndex(s >= 0 ? s : 0);
  enable_jpeg_choices();
}

void BatchDialog::enable_jpeg_choices() {
  const QString f = format_->currentData().toString();
  const bool jpeg = !running() && (f == "jpg" || f == "same");
  quality_->setEnabled(jpeg);
  subsampling_->setEnabled(jpeg);
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
  o.subsampling = static_cast<ChromaSubsampling>(subsampling_->currentData().toInt());
  o.devices = devices_->spec().toStdString();
  o.codec = parse_codec_choice(codec_->currentData().toString().toStdString());
  o.job.border.mode = static_cast<BorderMode>(border_->currentData().toInt());
  o.job.border.value = border_value_;
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
  summary_->clear();
}

void BatchDialog::start() {
  if (running()) return;
  // One status line per run: the last run's lines go as this one starts, also when it cannot.
  messages_->hide();
  summary_->clear();
  failed_->clear();
  open_output_->setEnabled(false);
  open_output_->hide();
  BatchOptions o;
  try {
    o = options();
    int existing = 0;
    for (const auto& item : plan_batch(o).items) existing += QFileInfo::exists(QString::fromStdString(item.output));
    if (existing > 0) {
      const Existing choice = ask_existing(existing);
      if (choice == Existing::Cancel) {
        current_->setText(tr("Not started: the outputs already there were left as they are"));
        emit batch_finished(false);
        return;
      }
      o.resume = choice == Existing::Resume;
    }
  } catch (const Error& e) {
    current_->setText(tr("Not started"));
    messages_->show_message(MessageBar::Level::Error, QString::fromUtf8(e.what()));
    emit batch_finished(false);
    return;
  }
  last_output_ = QString::fromStdString(o.output_dir);
  if (use_settings_) {
    QSettings s;
    s.setValue("batch/input", input_->text());
    s.setValue("batch/output", output_->text());
    s.setValue("batch/format", format_->currentData());
    s.setValue("batch/quality", quality_->value());
    s.setValue("batch/subsampling", subsampling_->currentData());
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
    summary_->clear();
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
  open_output_->setEnabled(ok + resumed > 0);
  open_output_->setVisible(ok + resumed > 0);
  open_output_->setToolTip(last_output_);
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
  // What the CLI prints as "note:" lines (a temporary file of an interrupted run removed, GPUs that joined
  // too late to matter) comes under the failures, if any.
  QStringList lines;
  if (failed) lines << tr("%1 of %2 files failed; the list below says why.").arg(failed).arg(total);
  for (const auto& n : r.notes) lines << QString::fromStdString(n);
  if (!lines.isEmpty())
    messages_->show_message(failed ? MessageBar::Level::Warning : MessageBar::Level::Info,
                            lines.join(QLatin1Char('\n')));
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
  subsampling_->setEnabled(!running);
  if (!running) {
    enable_jpeg_choices();
    codec_->setEnabled(codec_->count() > 1);
  }
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
