// The speedup demo: runs core's measure_speedup — one filter, one image size, on 1..N devices, each
// timed after a warm-up — and shows the speedup against the ideal line, the time split per device
// count, a table of the numbers and the one sentence that names the bound. Afterwards one more job on
// all N devices fills the device panel and the timeline, from the same telemetry.
#pragma once
#include <QDialog>
#include <QFutureWatcher>
#include <atomic>
#include <memory>

#include "model/filter_entry.hpp"
#include "model/job_view.hpp"
#include "tilefilter/engine/speedup.hpp"

class QComboBox;
class QSpinBox;
class QLabel;
class QGroupBox;
class QProgressBar;
class QPushButton;
class QTableWidget;

class QChartView;

namespace tf::gui {

class MessageBar;

class SpeedupDialog : public QDialog {
  Q_OBJECT
 public:
  explicit SpeedupDialog(QWidget* parent = nullptr);
  ~SpeedupDialog() override;
  static constexpr int kMaxRuns = 30;  // per device count, while the runs spread too widely

  void set_chain(const ChainSettings& chain);
  // "cpu" (CPU workers 1..N) or "gpu" (GPUs 1..N); N = device_count.
  void set_devices(const QString& family, int device_count);
  void set_image_size(int width, int height);
  void set_repeats(int repeats);
  void start();
  void cancel();
  bool running() const { return watcher_.isRunning(); }

  const SpeedupResult& result() const { return result_; }
  QString explanation() const;
  QString error_text() const;
  QChartView* speedup_view() const { return speedup_view_; }
  QChartView* split_view() const { return split_view_; }

 signals:
  void job_finished(const tf::gui::JobView& job);
  void measured(bool ok);

 protected:
  void closeEvent(QCloseEvent*) override;

 private:
  QGroupBox* build_setup();  // filter, image size, devices, runs
  struct Outcome {
    SpeedupResult result;
    std::shared_ptr<JobReport> last_job;
    std::size_t pixel_bytes = 0;
    QString title;
    QString error;
  };
  void finished();
  void show_result();
  void set_running(bool running);

  QComboBox* filter_ = nullptr;
  QComboBox* size_ = nullptr;
  QComboBox* family_ = nullptr;
  QSpinBox* count_ = nullptr;
  QSpinBox* repeats_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* stop_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* explanation_ = nullptr;
  QTableWidget* table_ = nullptr;
  QChartView* speedup_view_ = nullptr;
  QChartView* split_view_ = nullptr;
  MessageBar* messages_ = nullptr;

  ChainSettings chain_;
  SpeedupResult result_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  QFutureWatcher<Outcome> watcher_;
};

}  // namespace tf::gui
