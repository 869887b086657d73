// The timeline of the last job: one lane per device stream (or CPU worker) plus the decode and
// encode threads when the job had them, each tile a bar coloured by stage. Hovering a bar tells the
// tile, its size and its times; the wheel zooms the time axis, dragging pans, a double click fits.
// This is where overlap of copies and kernels, and idle gaps, become visible.
#pragma once
#include <QWidget>
#include <vector>

#include "model/job_view.hpp"

namespace tf::gui {

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);
  void set_job(const JobView& job);
  const JobView& job() const { return job_; }

  struct Lane {
    int device = -1;  // -1: host thread
    int lane = 0;
    StageKind host_stage = StageKind::Decode;  // for host lanes
    QString label;
  };
  const std::vector<Lane>& lanes() const { return lanes_; }
  // The tooltip text for a record (also used by tests).
  QString describe(const StageRecord& r) const;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent*) override;
  bool event(QEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;

 private:
  int lane_of(const StageRecord& r) const;
  QRectF bar_rect(const StageRecord& r, int lane) const;
  const StageRecord* record_at(QPointF p) const;
  double x_of(double t) const;
  double t_of(double x) const;
  QRect plot_rect() const;

  JobView job_;
  std::vector<Lane> lanes_;
  double origin_ = 0, span_ = 1;  // the job: first start, length (s)
  double view0_ = 0, view1_ = 1;  // the visible time range (s after origin)
  bool dragging_ = false;
  double drag_x_ = 0;
};

}  // namespace tf::gui
