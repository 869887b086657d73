// One device in the device panel: name, memory used/total, a live utilization graph and, for the
// last job, its tiles and where its time went (upload / kernel / download or compute / idle).
// The CPU has one card that stands for all CPU workers of a job.
#pragma once
#include <QFrame>
#include <vector>

#include "model/job_view.hpp"
#include "platform/utilization_sampler.hpp"

class QLabel;
class QProgressBar;

namespace tf::gui {

class StageBars;
class UtilizationGraph;

class DeviceCard : public QFrame {
  Q_OBJECT
 public:
  DeviceCard(const QString& id, const QString& name, const QString& details, bool cpu, QWidget* parent = nullptr);

  const QString& id() const { return id_; }
  bool is_cpu() const { return cpu_; }
  void set_details(const QString& details);  // the line under the name (the CPU card's changes when the GPUs come)
  // Does this card stand for the job's device with this id ("gpu1"; the CPU card takes "cpu*")?
  bool covers(const std::string& device_id) const;
  void add_sample(const UtilizationSample& sample);
  void show_job(const JobView& job);
  const UtilizationGraph* graph() const { return graph_; }
  const StageBars* bars() const { return bars_; }
  QString job_text() const;

 private:
  QString id_;
  bool cpu_;
  QLabel* details_ = nullptr;
  QLabel* memory_text_ = nullptr;
  QProgressBar* memory_bar_ = nullptr;
  UtilizationGraph* graph_ = nullptr;
  QLabel* job_ = nullptr;
  StageBars* bars_ = nullptr;
};

}  // namespace tf::gui
