// Samples every device a few times a second on a thread of its own (NVML calls must never stall the
// GUI): each GPU's utilization and memory through Device::sample(), and for the CPU the process's
// share of all cores and the host's memory from /proc. Results arrive as a queued signal.
#pragma once
#include <QObject>
#include <QString>
#include <QThread>
#include <QVector>

namespace tf::gui {

struct UtilizationSample {
  QString id;               // "gpu0" ... or "cpu"
  double utilization = -1;  // percent; -1 unknown
  quint64 memory_used = 0, memory_total = 0;
  quint64 process_memory = 0;       // CPU: resident bytes of this process
  quint64 process_peak_memory = 0;  // CPU: its peak resident bytes since start
};

class UtilizationSampler : public QObject {
  Q_OBJECT
 public:
  explicit UtilizationSampler(int interval_ms = 250, QObject* parent = nullptr);
  ~UtilizationSampler() override;

 signals:
  void sampled(const QVector<tf::gui::UtilizationSample>& samples);

 private:
  QThread thread_;
};

}  // namespace tf::gui

Q_DECLARE_METATYPE(tf::gui::UtilizationSample)
