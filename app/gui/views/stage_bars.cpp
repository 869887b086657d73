#include "stage_bars.hpp"

#include <QPainter>
#include <algorithm>

namespace tf::gui {

namespace {
constexpr int kRow = 16;
QString duration_text(double s) {
  if (s >= 1) return QStringLiteral("%1 s").arg(s, 0, 'f', 2);
  if (s >= 0.01) return QStringLiteral("%1 ms").arg(s * 1e3, 0, 'f', 1);
  return QStringLiteral("%1 ms").arg(s * 1e3, 0, 'f', 2);
}
}  // namespace

StageBars::StageBars(QWidget* parent) : QWidget(parent) { setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed); }

void StageBars::set_bars(std::vector<Bar> bars, double capacity_s) {
  bars_ = std::move(bars);
  capacity_s_ = capacity_s;
  updateGeometry();
  update();
}

void StageBars::clear() { set_bars({}, 0); }

QSize StageBars::sizeHint() const { return {220, std::max(1, static_cast<int>(bars_.size())) * kRow + 2}; }

void StageBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 0.85);
  p.setFont(f);
  const QFontMetrics fm(f);
  if (bars_.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignLeft | Qt::AlignVCenter, tr("no job yet"));
    return;
  }
  const int label_w = fm.horizontalAdvance(QStringLiteral("Download ")) + 4;
  const int value_w = fm.horizontalAdvance(QStringLiteral("000.00 ms 100%")) + 6;
  const int bar_w = std::max(20, width() - label_w - value_w - 6);
  for (std::size_t i = 0; i < bars_.size(); ++i) {
    const Bar& b = bars_[i];
    const int y = static_cast<int>(i) * kRow;
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(QRect(0, y, label_w, kRow), Qt::AlignLeft | Qt::AlignVCenter, b.label);
    const QRect track(label_w, y + 3, bar_w, kRow - 6);
    p.fillRect(track, QColor(255, 255, 255, 20));
    const double share = capacity_s_ > 0 ? std::clamp(b.seconds / capacity_s_, 0.0, 1.0) : 0.0;
    p.fillRect(QRect(track.left(), track.top(), static_cast<int>(track.width() * share + 0.5), track.height()),
               b.color);
    p.drawText(QRect(width() - value_w, y, value_w, kRow), Qt::AlignRight | Qt::AlignVCenter,
               QStringLiteral("%1  %2%").arg(duration_text(b.seconds)).arg(share * 100, 0, 'f', 0));
  }
}

}  // namespace tf::gui
