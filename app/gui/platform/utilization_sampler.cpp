#include "utilization_sampler.hpp"

#include <QTimer>

#include "device_hub.hpp"
#include "proc_stats.hpp"

namespace tf::gui {

namespace {

// Lives on the sampler thread; its timer fires there.
class SamplerWorker : public QObject {
  Q_OBJECT
 public:
  explicit SamplerWorker(int interval_ms) : interval_ms_(interval_ms) {}

  void start() {
    timer_ = new QTimer(this);
    connect(timer_, &QTimer::timeout, this, &SamplerWorker::tick);
    timer_->start(interval_ms_);
    tick();
  }

 signals:
  void sampled(const QVector<tf::gui::UtilizationSample>& samples);

 private:
  void tick() {
    QVector<UtilizationSample> out;
    for (const auto& gpu : DeviceHub::instance().gpus()) {
      UtilizationSample s;
      s.id = QString::fromStdString(gpu->info().id);
      s.memory_total = gpu->info().memory_total;
      if (auto d = gpu->sample()) {
        s.utilization = d->utilization;
        s.memory_used = d->memory_used;
        if (d->memory_total) s.memory_total = d->memory_total;
      }
      out.push_back(s);
    }
    UtilizationSample cpu;
    cpu.id = QStringLiteral("cpu");
    cpu.utilization = cpu_.sample();
    const HostMemory m = host_memory();
    cpu.memory_total = m.total;
    cpu.memory_used = m.total - m.available;
    cpu.process_memory = process_resident_bytes();
    cpu.process_peak_memory = process_peak_resident_bytes();
    out.push_back(cpu);
    emit sampled(out);
  }

  int interval_ms_;
  QTimer* timer_ = nullptr;
  CpuUsageMeter cpu_;
};

}  // namespace

UtilizationSampler::UtilizationSampler(int interval_ms, QObject* parent) : QObject(parent) {
  qRegisterMetaType<tf::gui::UtilizationSample>();
  qRegisterMetaType<QVector<tf::gui::UtilizationSample>>();
  thread_.setObjectName("tf-sampler");
  auto* worker = new SamplerWorker(interval_ms);
  worker->moveToThread(&thread_);
  connect(&thread_, &QThread::started, worker, &SamplerWorker::start);
  connect(&thread_, &QThread::finished, worker, &QObject::deleteLater);
  connect(worker, &SamplerWorker::sampled, this, &UtilizationSampler::sampled, Qt::QueuedConnection);
  thread_.start(QThread::LowPriority);
}

UtilizationSampler::~UtilizationSampler() {
  thread_.quit();
  thread_.wait();
}

}  // namespace tf::gui

#include "utilization_sampler.moc"
