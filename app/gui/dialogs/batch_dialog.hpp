// The batch dialog: input and output folders, the filter chain and border (taken from the panel),
// output format and quality, devices, the JPEG codecs present; one overall progress bar plus the
// files in flight; cancel; the failed files with their reasons; outputs already there are
// overwritten or kept (resume) as the user chooses; "Open Output Folder" at the end. It runs core's
// run_batch — the same job, with the same defaults, as `tilefilter batch` — off the GUI thread.
#pragma once
#include <QDialog>
#include <QFutureWatcher>
#include <QThreadPool>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "model/document.hpp"
#include "model/filter_entry.hpp"
#include "model/job_view.hpp"
#include "tilefilter/batch/batch.hpp"

class QLineEdit;
class QCheckBox;
class QPlainTextEdit;
class QComboBox;
class QSpinBox;
class QProgressBar;
class QLabel;
class QTreeWidget;
class QPushButton;
class QGroupBox;
class QHBoxLayout;
class QDialogButtonBox;

namespace tf::gui {

class DeviceChoice;
class MessageBar;

class BatchDialog : public QDialog {
  Q_OBJECT
 public:
  explicit BatchDialog(bool use_settings, QWidget* parent = nullptr);
  ~BatchDialog() override;

  void set_chain(const ChainSettings& chain);
  void set_devices(const QString& spec);
  void set_folders(const QString& input, const QString& output);
  void suggest_input(const QString& dir);                               // only when no input folder is set yet
  void set_format(const QString& format, const JpegChoice& jpeg = {});  // quality 0: each input's
  // "auto", "cpu" or "gpu" (--codec); "gpu" falls back to "auto" in a build without a GPU codec.
  void set_codec(const QString& codec);

  // What to do with outputs that exist already: asked when a job would write over some.
  enum class Existing { Overwrite, Resume, Cancel };
  // Replaces the question (a message box) with `choose(count of existing outputs)`, e.g. in tests.
  void set_existing_chooser(std::function<Existing(int)> choose) { choose_existing_ = std::move(choose); }
  QStringList codec_choices() const;  // the codec list's data: "auto", "cpu", "gpu" as offered
  bool can_open_output() const;       // "Open Output Folder" shown and enabled

  // Builds the options from the widgets (throws tf::Error for an unusable chain or folder).
  BatchOptions options() const;
  void start();
  void cancel();
  bool running() const { return watcher_.isRunning(); }

  QStringList failed_files() const;  // "name: reason" per failed or skipped file
  QString summary_text() const;
  QString status_text() const;    // the line under the progress bar
  QString progress_text() const;  // what the progress bar shows, "0 of 16 files"
  QString error_text() const;
  int progress_value() const;
  int progress_maximum() const;

 signals:
  void job_finished(const tf::gui::JobView& job);
  void batch_finished(bool completed);  // false: the job could not run (error shown)

 protected:
  void closeEvent(QCloseEvent*) override;

 private:
  struct Outcome {
    BatchReport report;
    QString error;
  };
  QGroupBox* build_job_box();
  QHBoxLayout* build_format_row(QWidget* parent);
  QGroupBox* build_progress_box();
  QDialogButtonBox* build_buttons();
  void list_codecs();          // the JPEG codecs this build and machine have
  void enable_jpeg_choices();  // quality and subsampling only where JPEGs may be written
  Existing ask_existing(int count);
  void show_plan();  // before Start: how many files the folder holds
  void show_progress();
  void finished();
  void set_running(bool running);

  bool use_settings_;
  QLineEdit* input_ = nullptr;
  QLineEdit* output_ = nullptr;
  QCheckBox* recursive_ = nullptr;
  QPlainTextEdit* chain_ = nullptr;
  QComboBox* border_ = nullptr;
  float border_value_ = 0;  // the panel's, for the constant border
  QComboBox* format_ = nullptr;
  QComboBox* codec_ = nullptr;
  QSpinBox* quality_ = nullptr;  // 0 = each input's
  QComboBox* subsampling_ = nullptr;
  DeviceChoice* devices_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* current_ = nullptr;
  QLabel* summary_ = nullptr;
  QTreeWidget* failed_ = nullptr;
  MessageBar* messages_ = nullptr;
  QPushButton* start_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* open_output_ = nullptr;
  QString last_output_;  // of the last run
  std::function<Existing(int)> choose_existing_;

  std::shared_ptr<std::atomic<bool>> cancel_flag_;
  struct Shared {  // progress handed from the batch's threads to the GUI thread
    std::mutex mutex;
    BatchProgress latest;
    bool posted = false;
  };
  std::shared_ptr<Shared> shared_;
  QThreadPool pool_;  // its own thread: the batch lowers that thread's priority
  QFutureWatcher<Outcome> watcher_;
};

}  // namespace tf::gui
