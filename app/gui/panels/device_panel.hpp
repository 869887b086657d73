// The device panel (right dock): the last job's title, one line naming what bounded it and a row per
// device and CPU worker it used; a card per GPU the backend found (added when discovery finishes,
// which may be after the window is up) plus one for the CPU, with live utilization from the sampler
// and the last job's split from its telemetry; under them the memory a large image is streamed in
// (core's budget) beside what this process holds now and at peak.
#pragma once
#include <QWidget>
#include <vector>

#include "model/job_view.hpp"
#include "platform/utilization_sampler.hpp"

class QLabel;
class QVBoxLayout;

namespace tf::gui {

class DeviceCard;
class WorkerRows;

class DevicePanel : public QWidget {
  Q_OBJECT
 public:
  explicit DevicePanel(QWidget* parent = nullptr);
  void show_job(const JobView& job);
  // A job started (a preview of the chain on screen): the figures of the one before are out of date.
  void show_pending(const QString& title);
  QString job_title() const;
  QString bound_text() const;
  const WorkerRows* worker_rows() const { return rows_; }
  const std::vector<DeviceCard*>& cards() const { return cards_; }
  DeviceCard* card(const QString& id) const;
  QString memory_text() const;  // the budget and the process's resident memory, as shown

 public slots:
  void add_samples(const QVector<tf::gui::UtilizationSample>& samples);

 private:
  std::vector<DeviceCard*> cards_;  // the GPUs', then the CPU's
  void show_memory(quint64 resident, quint64 peak);
  void show_gpus();  // a card for each GPU found so far; the CPU card says whether there are any

  DeviceCard* cpu_ = nullptr;
  QVBoxLayout* cards_layout_ = nullptr;

  QLabel* job_title_ = nullptr;
  QLabel* bound_ = nullptr;
  WorkerRows* rows_ = nullptr;
  QLabel* memory_ = nullptr;
};

}  // namespace tf::gui
