// How one device spent the last job: a bar per kind of work (upload, kernel, download or compute,
// and idle), each as a share of the job's wall time summed over the device's lanes — so a GPU with
// four streams that overlap copies and kernels shows where its lanes were busy and where they idled.
#pragma once
#include <QWidget>
#include <vector>

#include "tilefilter/engine/telemetry.hpp"

namespace tf::gui {

class StageBars : public QWidget {
  Q_OBJECT
 public:
  struct Bar {
    QString label;
    QColor color;
    double seconds = 0;
  };
  explicit StageBars(QWidget* parent = nullptr);
  // `capacity_s` is the wall time times the lanes: what 100% means.
  void set_bars(std::vector<Bar> bars, double capacity_s);
  void clear();
  const std::vector<Bar>& bars() const { return bars_; }
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override { return sizeHint(); }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::vector<Bar> bars_;
  double capacity_s_ = 0;
};

}  // namespace tf::gui
