#include "device_panel.hpp"

#include <algorithm>

#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>

#include "device_card.hpp"
#include "model/document.hpp"
#include "platform/device_hub.hpp"
#include "platform/proc_stats.hpp"
#include "tilefilter/io/stream.hpp"
#include "views/worker_rows.hpp"

namespace tf::gui {

namespace {
QString gpu_details(const DeviceInfo& i) {
  QStringList parts;
  if (i.multiprocessors > 0) parts << QObject::tr("%1 SMs").arg(i.multiprocessors);
  if (!i.link.empty()) parts << QString::fromStdString(i.link);
  return parts.join(QStringLiteral(" · "));
}

QString mib(quint64 bytes) { return QObject::tr("%1 MiB").arg((bytes + (1 << 19)) >> 20); }
}  // namespace

DevicePanel::DevicePanel(QWidget* parent) : QWidget(parent) {
  setObjectName("devicePanel");
  setMinimumWidth(330);
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);  // cards follow the dock's width
  auto* content = new QWidget(scroll);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(8, 8, 8, 8);
  layout->setSpacing(8);
  job_title_ = new QLabel(tr("No job yet"), content);
  job_title_->setObjectName("panelJobTitle");
  job_title_->setWordWrap(true);
  layout->addWidget(job_title_);
  bound_ = new QLabel(content);
  bound_->setObjectName("panelBound");
  bound_->setWordWrap(true);
  QFont strong = bound_->font();
  strong.setBold(true);
  bound_->setFont(strong);
  bound_->hide();
  layout->addWidget(bound_);
  rows_ = new WorkerRows(content);
  layout->addWidget(rows_);

  auto& hub = DeviceHub::instance();
  cpu_ = new DeviceCard(QStringLiteral("cpu"), tr("CPU workers"), QString(), true, content);
  cards_.push_back(cpu_);
  layout->addWidget(cpu_);
  cards_layout_ = layout;
  // Queued, also when discovery ends on this thread: show_gpus() runs after this constructor.
  connect(&hub, &DeviceHub::discovery_finished, this, &DevicePanel::show_gpus, Qt::QueuedConnection);
  show_gpus();
  memory_ = new QLabel(content);
  memory_->setObjectName("memoryLabel");
  memory_->setWordWrap(true);
  memory_->setToolTip(
      tr("Images too large to decode whole stay on disk: the window shows an overview, Save As and "
         "Apply filter them band by band, and a large document keeps only the undo steps whose "
         "overviews fit in this budget (TF_GUI_MEMORY_BYTES sets it). The process's peak resident "
         "memory is measured by Linux since it started."));
  layout->addWidget(memory_);
  show_memory(process_resident_bytes(), process_peak_resident_bytes());
  layout->addStretch(1);
  scroll->setWidget(content);
  outer->addWidget(scroll);
}

void DevicePanel::show_gpus() {
  auto& hub = DeviceHub::instance();
  const auto gpus = hub.gpus();
  for (const auto& g : gpus) {
    const DeviceInfo& i = g->info();
    if (card(QString::fromStdString(i.id))) continue;
    auto* gpu = new DeviceCard(QString::fromStdString(i.id), QString::fromStdString(i.name), gpu_details(i), false,
                               cpu_->parentWidget());
    cards_.insert(cards_.end() - 1, gpu);  // the CPU card stays last
    cards_layout_->insertWidget(cards_layout_->indexOf(cpu_), gpu);
  }
  if (!gpus.empty()) {
    cpu_->set_details(tr("%1 hardware threads · decode, encode, fallback tiles").arg(hub.cpu_cores()));
    cpu_->setToolTip(QString());
  } else if (hub.gpus_ready()) {
    cpu_->set_details(tr("%1 hardware threads · no GPU").arg(hub.cpu_cores()));
    cpu_->setToolTip(tr("No GPU: %1").arg(hub.gpu_message()));
  } else {
    cpu_->set_details(tr("%1 hardware threads · GPUs starting").arg(hub.cpu_cores()));
    cpu_->setToolTip(tr("The GPUs are still starting: until they are ready, jobs on all devices run here"));
  }
}

DeviceCard* DevicePanel::card(const QString& id) const {
  for (auto* c : cards_)
    if (c->id() == id) return c;
  return nullptr;
}

void DevicePanel::show_job(const JobView& job) {
  job_title_->setText(job.title);
  const QString bound = bound_line(job);
  bound_->setText(bound);
  bound_->setVisible(!bound.isEmpty());
  rows_->show_job(job);
  for (auto* c : cards_) c->show_job(job);
}

void DevicePanel::show_pending(const QString& title) {
  job_title_->setText(title);
  bound_->hide();
  bound_->clear();
  rows_->clear();
  for (auto* c : cards_) c->show_job(JobView{});
}

QString DevicePanel::job_title() const { return job_title_->text(); }
QString DevicePanel::bound_text() const { return bound_->isHidden() ? QString() : bound_->text(); }

QString DevicePanel::memory_text() const { return memory_->text(); }

void DevicePanel::show_memory(quint64 resident, quint64 peak) {
  // The two are read a moment apart (and the arguments in either order): the peak is never below what
  // is resident.
  peak = std::max(peak, resident);
  memory_->setText(tr("Memory budget for large images: %1 (bands streamed within %2, the rest for the "
                      "process, the on-screen overviews and the undo steps that fit)\n"
                      "This process: %3 resident, %4 peak")
                       .arg(mib(large_document_budget()), mib(default_stream_budget()), mib(resident), mib(peak)));
}

void DevicePanel::add_samples(const QVector<UtilizationSample>& samples) {
  for (const auto& s : samples) {
    if (auto* c = card(s.id)) c->add_sample(s);
    if (s.id == QStringLiteral("cpu") && s.process_memory > 0) show_memory(s.process_memory, s.process_peak_memory);
  }
}

}  // namespace tf::gui
