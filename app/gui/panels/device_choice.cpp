#include "device_choice.hpp"

#include <QInputDialog>

#include "platform/device_hub.hpp"

namespace tf::gui {

namespace {
constexpr const char* kCustom = "\x01custom";
}

DeviceChoice::DeviceChoice(QWidget* parent) : QComboBox(parent) {
  setObjectName("deviceChoice");
  // Queued, also when discovery ends on this thread: fill() runs after this constructor.
  const auto refill = [this] { fill(spec()); };
  connect(&DeviceHub::instance(), &DeviceHub::discovery_finished, this, refill, Qt::QueuedConnection);
  fill(QStringLiteral("all"));
  connect(this, &QComboBox::activated, this, [this](int index) {
    if (itemData(index).toString() == kCustom) {
      bool ok = false;
      const QString spec = QInputDialog::getText(this, tr("Devices"), tr("Device selection (as tilefilter --devices):"),
                                                 QLineEdit::Normal, itemData(last_index_).toString(), &ok)
                               .trimmed();
      if (!ok || spec.isEmpty()) {
        setCurrentIndex(last_index_);
        return;
      }
      set_spec(spec);
    }
    last_index_ = currentIndex();
    emit spec_changed(spec());
  });
}

void DeviceChoice::fill(const QString& keep) {
  auto& hub = DeviceHub::instance();
  const auto gpus = hub.gpus();
  clear();
  if (!gpus.empty()) {
    addItem(tr("All GPUs (%1)").arg(gpus.size()), "all");
    for (const auto& g : gpus)
      addItem(tr("GPU %1 · %2").arg(g->info().ordinal).arg(QString::fromStdString(g->info().name)),
              QString::number(g->info().ordinal));
    addItem(tr("GPUs + 1 CPU worker"), "gpu,cpu:1");
  } else if (hub.gpus_ready()) {
    addItem(tr("All devices (no GPU: %1 CPU workers)").arg(hub.cpu_cores()), "all");
  } else {
    addItem(tr("All devices (the CPU workers until the GPUs are ready)"), "all");
  }
  addItem(tr("CPU, %1 workers").arg(hub.cpu_cores()), "cpu");
  addItem(tr("CPU, 1 worker"), "cpu:1");
  addItem(tr("Custom selection…"), kCustom);
  setToolTip(tr("Devices for the job: all | gpu | cpu | cpu:N | GPU ordinals like 0,1 | mixes like 0,cpu:2\n%1")
                 .arg(gpus.empty() ? tr("No GPU: %1").arg(hub.gpu_message()) : QString()));
  set_spec(keep);
}

QString DeviceChoice::spec() const {
  const QString s = currentData().toString();
  return s == kCustom ? QStringLiteral("all") : s;
}

void DeviceChoice::set_spec(const QString& spec) {
  int i = findData(spec);
  if (i < 0) {
    insertItem(count() - 1, spec, spec);
    i = count() - 2;
  }
  setCurrentIndex(i);
  last_index_ = i;
}

}  // namespace tf::gui
