#include "worker_rows.hpp"

#include <QGridLayout>
#include <QLabel>
#include <QProgressBar>
#include <QVBoxLayout>
#include <algorithm>

namespace tf::gui {

WorkerRows::WorkerRows(QWidget* parent) : QWidget(parent) {
  setObjectName("workerRows");
  grid_ = new QGridLayout(this);
  grid_->setContentsMargins(0, 0, 0, 0);
  grid_->setHorizontalSpacing(8);
  grid_->setVerticalSpacing(2);
}

void WorkerRows::clear() {
  while (QLayoutItem* item = grid_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  rows_.clear();
}

void WorkerRows::show_job(const JobView& job) {
  clear();
  struct Row {
    QString id;
    int tiles = 0;
    double busy = 0;
  };
  std::vector<Row> rows;
  for (const auto& s : job.summaries) {
    if (s.device < 0 || s.device >= static_cast<int>(job.device_names.size())) continue;
    const std::string& name = job.device_names[static_cast<std::size_t>(s.device)];
    const int tiles = s.device < static_cast<int>(job.tiles_per_device.size())
                          ? job.tiles_per_device[static_cast<std::size_t>(s.device)]
                          : s.tiles;
    if (name == "cpu-fallback" && tiles == 0) continue;  // the spare lane that did nothing
    rows.push_back({QString::fromStdString(name), tiles, job.wall_s > 0 ? std::min(1.0, s.busy_s / job.wall_s) : 0});
  }
  const bool compact = static_cast<int>(rows.size()) > kCompactPast;
  columns_ = compact ? 4 : 1;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const QString tiles = r.tiles == 1 ? tr("1 tile") : tr("%1 tiles").arg(r.tiles);
    const QString text = tr("%1 · %2 · busy %3%").arg(r.id, tiles).arg(100 * r.busy, 0, 'f', 0);
    rows_ << text;
    auto* label = new QLabel(compact ? r.id : text, this);
    label->setToolTip(text);
    auto* bar = new QProgressBar(this);
    bar->setRange(0, 1000);
    bar->setValue(static_cast<int>(1000 * r.busy));
    bar->setTextVisible(false);
    bar->setFixedHeight(compact ? 5 : 7);
    bar->setToolTip(text);
    const int row = static_cast<int>(i) / columns_, column = static_cast<int>(i) % columns_;
    if (compact) {
      auto* cell = new QWidget(this);
      auto* v = new QVBoxLayout(cell);
      v->setContentsMargins(0, 0, 0, 0);
      v->setSpacing(0);
      label->setParent(cell);
      bar->setParent(cell);
      v->addWidget(label);
      v->addWidget(bar);
      grid_->addWidget(cell, row, column);
    } else {
      grid_->addWidget(label, row, 0);
      grid_->addWidget(bar, row, 1);
      grid_->setColumnStretch(1, 1);
    }
  }
}

}  // namespace tf::gui
