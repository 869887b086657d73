#include "device_card.hpp"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QVBoxLayout>
#include <set>

#include "views/stage_bars.hpp"
#include "views/stage_colors.hpp"
#include "views/utilization_graph.hpp"

namespace tf::gui {

namespace {
QString gib(quint64 bytes) { return QStringLiteral("%1 GiB").arg(bytes / double(1ULL << 30), 0, 'f', 1); }
QString mib(quint64 bytes) { return QStringLiteral("%1 MiB").arg(bytes / double(1ULL << 20), 0, 'f', 0); }
}  // namespace

DeviceCard::DeviceCard(const QString& id, const QString& name, const QString& details, bool cpu, QWidget* parent)
    : QFrame(parent), id_(id), cpu_(cpu) {
  setObjectName(QStringLiteral("card.%1").arg(id));
  setFrameShape(QFrame::StyledPanel);
  setAutoFillBackground(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(10, 8, 10, 8);
  layout->setSpacing(4);

  auto* head = new QHBoxLayout;
  auto* title = new QLabel(QStringLiteral("<b>%1</b> · %2").arg(id.toHtmlEscaped(), name.toHtmlEscaped()), this);
  title->setTextFormat(Qt::RichText);
  head->addWidget(title, 1);
  auto* kind = new QLabel(cpu ? tr("CPU") : tr("GPU"), this);
  kind->setStyleSheet(QStringLiteral("QLabel { border-radius: 3px; padding: 0 5px; color: white; background: %1; }")
                          .arg(cpu ? QStringLiteral("#3f7f8f") : QStringLiteral("#4a8a3a")));
  head->addWidget(kind);
  layout->addLayout(head);
  details_ = new QLabel(this);
  details_->setWordWrap(true);
  QPalette dim = details_->palette();
  dim.setColor(QPalette::WindowText, dim.color(QPalette::PlaceholderText));
  details_->setPalette(dim);
  layout->addWidget(details_);
  set_details(details);

  memory_text_ = new QLabel(tr("memory —"), this);
  memory_text_->setWordWrap(true);
  memory_bar_ = new QProgressBar(this);
  memory_bar_->setTextVisible(false);
  memory_bar_->setFixedHeight(6);
  memory_bar_->setRange(0, 1000);
  layout->addWidget(memory_text_);
  layout->addWidget(memory_bar_);

  graph_ = new UtilizationGraph(this);
  graph_->set_color(cpu ? stage_color(StageKind::Compute) : stage_color(StageKind::Kernel));
  graph_->setToolTip(cpu ? tr("CPU time of this process as a share of all cores, 4 samples a second")
                         : tr("GPU utilization from NVML, 4 samples a second"));
  layout->addWidget(graph_);

  job_ = new QLabel(tr("Last job: none yet"), this);
  job_->setObjectName("lastJob");
  job_->setWordWrap(true);
  layout->addWidget(job_);
  bars_ = new StageBars(this);
  layout->addWidget(bars_);
}

void DeviceCard::set_details(const QString& details) {
  details_->setText(details);
  details_->setVisible(!details.isEmpty());
}

bool DeviceCard::covers(const std::string& device_id) const {
  if (cpu_) return device_id.rfind("cpu", 0) == 0;
  return QString::fromStdString(device_id) == id_;
}

void DeviceCard::add_sample(const UtilizationSample& s) {
  graph_->add(s.utilization);
  if (s.memory_total > 0) {
    memory_bar_->setValue(static_cast<int>(1000.0 * s.memory_used / s.memory_total));
    memory_text_->setText(
        cpu_ ? tr("host %1 / %2 · process %3").arg(gib(s.memory_used), gib(s.memory_total), mib(s.process_memory))
             : tr("memory %1 / %2").arg(gib(s.memory_used), gib(s.memory_total)));
  }
}

QString DeviceCard::job_text() const { return job_->text(); }

void DeviceCard::show_job(const JobView& job) {
  double upload = 0, kernel = 0, download = 0, compute = 0, busy = 0;
  int tiles = 0, devices = 0;
  QStringList per_worker;
  std::set<std::pair<int, int>> lanes;  // (device, lane) pairs that did work
  for (const auto& s : job.summaries) {
    if (s.device < 0 || s.device >= static_cast<int>(job.device_names.size()) || !covers(job.device_names[s.device]))
      continue;
    const int device_tiles =
        s.device < static_cast<int>(job.tiles_per_device.size()) ? job.tiles_per_device[s.device] : s.tiles;
    if (job.device_names[s.device] == "cpu-fallback" && device_tiles == 0) continue;
    ++devices;
    upload += s.upload_s;
    kernel += s.kernel_s;
    download += s.download_s;
    compute += s.compute_s;
    busy += s.busy_s;
    tiles += device_tiles;
    per_worker << QStringLiteral("%1 %2").arg(QString::fromStdString(job.device_names[s.device])).arg(device_tiles);
  }
  for (const auto& r : job.records)
    if (r.device >= 0 && r.device < static_cast<int>(job.device_names.size()) && covers(job.device_names[r.device]))
      lanes.insert({r.device, r.lane});
  if (devices == 0) {
    job_->setText(job.empty() ? tr("Last job: none yet") : tr("Last job: not used"));
    bars_->clear();
    return;
  }
  const int lane_count = std::max<int>(1, static_cast<int>(lanes.size()));
  const double capacity = job.wall_s * lane_count;
  const double work = upload + kernel + download + compute;
  const double idle = std::max(0.0, capacity - work);
  if (cpu_) {
    job_->setText(tr("Last job: %1 tiles on %2 worker(s) (%3) · %4 ms wall · busy %5%")
                      .arg(tiles)
                      .arg(devices)
                      .arg(per_worker.join(QStringLiteral(" · ")))
                      .arg(job.wall_s * 1e3, 0, 'f', 1)
                      .arg(capacity > 0 ? 100 * work / capacity : 0, 0, 'f', 0));
    bars_->set_bars(
        {{stage_label(StageKind::Compute), stage_color(StageKind::Compute), compute}, {tr("Idle"), idle_color(), idle}},
        capacity);
  } else {
    job_->setText(tr("Last job: %1 tiles · %2 stream(s) · %3 ms wall · busy %4%")
                      .arg(tiles)
                      .arg(lane_count)
                      .arg(job.wall_s * 1e3, 0, 'f', 1)
                      .arg(job.wall_s > 0 ? 100 * busy / job.wall_s : 0, 0, 'f', 0));
    bars_->set_bars({{stage_label(StageKind::Upload), stage_color(StageKind::Upload), upload},
                     {stage_label(StageKind::Kernel), stage_color(StageKind::Kernel), kernel},
                     {stage_label(StageKind::Download), stage_color(StageKind::Download), download},
                     {tr("Idle"), idle_color(), idle}},
                    capacity);
  }
}

}  // namespace tf::gui
