// The device panel (right dock): a card per GPU the backend found (added when discovery finishes,
// which may be after the window is up) plus one for the CPU, with live utilization from the sampler
// and the last job's split from its telemetry, and under them the memory a large image is streamed
// in (core's budget) beside what this process holds now and at peak.
#pragma once
#include <QWidget>
#include <vector>

#include "model/job_view.hpp"
#include "platform/utilization_sampler.hpp"

class QLabel;
class QVBoxLayout;

namespace tf::gui {

class DeviceCard;

class DevicePanel : public QWidget {
  Q_OBJECT
 public:
  explicit DevicePanel(QWidget* parent = nullptr);
  void show_job(const JobView& job);
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
  QLabel* memory_ = nullptr;
};

}  // namespace tf::gui
