#include "utilization_graph.hpp"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

namespace tf::gui {

UtilizationGraph::UtilizationGraph(QWidget* parent) : QWidget(parent) {
  setMinimumHeight(52);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void UtilizationGraph::add(double percent) {
  values_.push_back(percent);
  while (static_cast<int>(values_.size()) > capacity_) values_.pop_front();
  update();
}

QString UtilizationGraph::time_span_text() const {
  return tr("%1 s ago").arg(std::lround(capacity_ * interval_ms_ / 1000.0));
}

void UtilizationGraph::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.75);
  p.setFont(small);
  const int axis = QFontMetrics(small).height();
  const int scale = QFontMetrics(small).horizontalAdvance(QStringLiteral("100%")) + 4;
  // Axes: utilization in percent up the left, seconds ago along the bottom.
  p.setPen(palette().color(QPalette::PlaceholderText));
  const QRectF labels(0, 0, scale - 3, height() - axis);
  p.drawText(labels, Qt::AlignRight | Qt::AlignTop, QStringLiteral("100%"));
  p.drawText(labels, Qt::AlignRight | Qt::AlignBottom, QStringLiteral("0%"));
  const QRectF times(scale, height() - axis, width() - scale, axis);
  p.drawText(times, Qt::AlignLeft | Qt::AlignVCenter, time_span_text());
  p.drawText(times, Qt::AlignRight | Qt::AlignVCenter, tr("now"));
  const QRectF r = QRectF(scale, 0, width() - scale, height() - axis).adjusted(0.5, 0.5, -0.5, -0.5);
  p.setPen(QColor(255, 255, 255, 30));
  p.setBrush(QColor(0, 0, 0, 60));
  p.drawRoundedRect(r, 3, 3);
  p.setPen(QPen(QColor(255, 255, 255, 25), 1, Qt::DotLine));
  for (double f : {0.25, 0.5, 0.75})
    p.drawLine(QPointF(r.left(), r.top() + r.height() * f), QPointF(r.right(), r.top() + r.height() * f));
  const double dx = r.width() / std::max(1, capacity_ - 1);
  const double x0 = r.right() - dx * (static_cast<double>(values_.size()) - 1);
  auto y_of = [&](double v) { return r.bottom() - 1 - (r.height() - 3) * std::clamp(v, 0.0, 100.0) / 100.0; };
  // One path per run of known values.
  QPainterPath line, area;
  bool open = false;
  double run_start = 0, prev_x = 0;
  for (std::size_t i = 0; i < values_.size(); ++i) {
    const double x = x0 + dx * static_cast<double>(i);
    if (values_[i] < 0) {
      if (open) {
        area.lineTo(prev_x, r.bottom());
        area.lineTo(run_start, r.bottom());
        area.closeSubpath();
      }
      open = false;
      continue;
    }
    const QPointF pt(x, y_of(values_[i]));
    if (!open) {
      line.moveTo(pt);
      area.moveTo(x, r.bottom());
      area.lineTo(pt);
      run_start = x;
      open = true;
    } else {
      line.lineTo(pt);
      area.lineTo(pt);
    }
    prev_x = x;
  }
  if (open) {
    area.lineTo(prev_x, r.bottom());
    area.lineTo(run_start, r.bottom());
    area.closeSubpath();
  }
  QColor fill = color_;
  fill.setAlpha(70);
  p.fillPath(area, fill);
  p.setPen(QPen(color_, 1.5));
  p.setBrush(Qt::NoBrush);
  p.drawPath(line);
  const double v = last();
  p.setPen(QColor(230, 230, 230));
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 0.85);
  p.setFont(f);
  p.drawText(r.adjusted(4, 2, -4, -2), Qt::AlignRight | Qt::AlignTop,
             v < 0 ? tr("n/a") : QStringLiteral("%1%").arg(v, 0, 'f', 0));
}

}  // namespace tf::gui
