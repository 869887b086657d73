// A small live graph of a device's utilization over the last half minute (newest on the right).
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
  double last() const { return values_.empty() ? -1 : values_.back(); }
  int samples() const { return static_cast<int>(values_.size()); }
  QSize sizeHint() const override { return {220, 46}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::deque<double> values_;
  int capacity_ = 120;
  QColor color_{0x5c, 0xc2, 0x6a};
};

}  // namespace tf::gui
