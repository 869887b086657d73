// A small live graph of a device's utilization over the last half minute (newest on the right), with
// its axes labelled: 0–100 % up, seconds ago across.
#pragma once
#include <QColor>
#include <QWidget>
#include <deque>

namespace tf::gui {

class UtilizationGraph : public QWidget {
  Q_OBJECT
 public:
  explicit UtilizationGraph(QWidget* parent = nullptr);
  void add(double percent);  // -1 = unknown (drawn as a gap)
  void set_color(const QColor& c) { color_ = c; }
  void set_capacity(int samples) { capacity_ = samples; }
  void set_interval_ms(int ms) { interval_ms_ = ms; }  // between samples, for the time axis
  QString time_span_text() const;                      // "30 s ago", the left end of the time axis
  double last() const { return values_.empty() ? -1 : values_.back(); }
  int samples() const { return static_cast<int>(values_.size()); }
  QSize sizeHint() const override { return {220, 58}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::deque<double> values_;
  int capacity_ = 120;
  int interval_ms_ = 250;
  QColor color_{0x5c, 0xc2, 0x6a};
};

}  // namespace tf::gui
