// The last job's devices one by one: each GPU and each CPU worker its own row (id, tiles, busy share
// as a bar), and past 16 a compact grid of four columns with the id and the bar only, so a 64-core
// machine still fits the dock.
#pragma once
#include <QStringList>
#include <QWidget>

#include "model/job_view.hpp"

class QGridLayout;

namespace tf::gui {

class WorkerRows : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kCompactPast = 16;
  explicit WorkerRows(QWidget* parent = nullptr);
  void show_job(const JobView& job);
  void clear();
  QStringList rows() const { return rows_; }  // "cpu1 · 12 tiles · busy 87%", as shown
  int columns() const { return columns_; }

 private:
  QGridLayout* grid_ = nullptr;
  QStringList rows_;
  int columns_ = 1;
};

}  // namespace tf::gui
