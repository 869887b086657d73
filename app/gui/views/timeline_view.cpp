#include "timeline_view.hpp"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <map>

#include "stage_colors.hpp"

namespace tf::gui {

namespace {
constexpr int kLabelWidth = 96;
constexpr int kAxisHeight = 22;
constexpr int kLegendHeight = 20;
constexpr int kRow = 16;
constexpr int kGap = 3;

QString ms(double s) { return QStringLiteral("%1 ms").arg(s * 1e3, 0, 'f', s < 0.01 ? 3 : 2); }

// A "nice" tick step (1, 2, 5 times a power of ten) giving about `want` ticks over `span`.
double tick_step(double span, int want) {
  const double raw = span / std::max(1, want);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}
}  // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  setObjectName("timelineView");
  setMouseTracking(true);
}

QSize TimelineView::sizeHint() const {
  return {600, kLegendHeight + kAxisHeight + std::max(2, static_cast<int>(lanes_.size())) * (kRow + kGap) + 6};
}
QSize TimelineView::minimumSizeHint() const { return {300, sizeHint().height()}; }

void TimelineView::set_job(const JobView& job) {
  job_ = job;
  lanes_.clear();
  std::map<std::tuple<int, int, int>, QString> keys;  // (group, device, lane): decode first, devices, encode last
  auto device_lane = [&](int device, int lane) {
    const std::string& name = device < static_cast<int>(job_.device_names.size()) ? job_.device_names[device] : "?";
    const bool cpu = name.rfind("cpu", 0) == 0;
    keys[{1, device, lane}] =
        cpu ? QString::fromStdString(name) : QStringLiteral("%1 · s%2").arg(QString::fromStdString(name)).arg(lane);
  };
  // Every device of the job gets a lane, also one that got no tile: an idle device is worth seeing.
  for (std::size_t d = 0; d < job_.device_names.size(); ++d)
    if (job_.device_names[d] != "cpu-fallback") device_lane(static_cast<int>(d), 0);
  for (const auto& r : job_.records) {
    if (r.device >= 0) {
      device_lane(r.device, r.lane);
    } else {
      const int group = r.stage == StageKind::Encode ? 2 : 0;
      keys[{group, r.stage == StageKind::Encode ? 1 : 0, r.lane}] =
          QStringLiteral("%1 %2").arg(r.stage == StageKind::Encode ? tr("encode") : tr("decode")).arg(r.lane);
    }
  }
  for (const auto& [key, label] : keys) {
    Lane l;
    l.device = std::get<0>(key) == 1 ? std::get<1>(key) : -1;
    l.lane = std::get<2>(key);
    l.host_stage = std::get<0>(key) == 2 ? StageKind::Encode : StageKind::Decode;
    l.label = label;
    lanes_.push_back(l);
  }
  origin_ = first_start(job_.records);
  double end = origin_;
  for (const auto& r : job_.records) end = std::max(end, r.t1);
  span_ = std::max(1e-6, end - origin_);
  view0_ = 0;
  view1_ = span_;
  updateGeometry();
  update();
}

int TimelineView::lane_of(const StageRecord& r) const {
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    const Lane& l = lanes_[i];
    if (r.device >= 0 ? (l.device == r.device && l.lane == r.lane)
                      : (l.device < 0 && l.lane == r.lane &&
                         (l.host_stage == StageKind::Encode) == (r.stage == StageKind::Encode)))
      return static_cast<int>(i);
  }
  return -1;
}

QRect TimelineView::plot_rect() const {
  return QRect(kLabelWidth, kLegendHeight + kAxisHeight, std::max(10, width() - kLabelWidth - 8),
               static_cast<int>(lanes_.size()) * (kRow + kGap));
}

double TimelineView::x_of(double t) const {
  const QRect p = plot_rect();
  return p.left() + (t - origin_ - view0_) / (view1_ - view0_) * p.width();
}

double TimelineView::t_of(double x) const {
  const QRect p = plot_rect();
  return origin_ + view0_ + (x - p.left()) / p.width() * (view1_ - view0_);
}

QRectF TimelineView::bar_rect(const StageRecord& r, int lane) const {
  const QRect p = plot_rect();
  const double x0 = x_of(r.t0), x1 = std::max(x_of(r.t1), x0 + 1.0);  // every bar at least a pixel
  return QRectF(x0, p.top() + lane * (kRow + kGap), x1 - x0, kRow);
}

const StageRecord* TimelineView::record_at(QPointF pos) const {
  for (const auto& r : job_.records) {
    const int lane = lane_of(r);
    if (lane >= 0 && bar_rect(r, lane).adjusted(-1, 0, 1, 0).contains(pos)) return &r;
  }
  return nullptr;
}

QString TimelineView::describe(const StageRecord& r) const {
  QString who = tr("host thread %1").arg(r.lane);
  if (r.device >= 0 && r.device < static_cast<int>(job_.device_names.size())) {
    const QString name = QString::fromStdString(job_.device_names[r.device]);
    who = name.startsWith(QStringLiteral("cpu")) ? name : tr("%1 stream %2").arg(name).arg(r.lane);
  }
  QString size;
  if (job_.pixel_bytes > 0 && r.bytes > 0) {
    const std::size_t pixels = r.bytes / job_.pixel_bytes;
    if (job_.tile.width > 0 && pixels == static_cast<std::size_t>(job_.tile.width) * job_.tile.height)
      size = QStringLiteral("%1×%2 px").arg(job_.tile.width).arg(job_.tile.height);
    else size = tr("%1 px").arg(pixels);
    size += QStringLiteral(" · %1 KiB").arg(r.bytes / 1024.0, 0, 'f', 0);
  } else if (r.bytes > 0) {
    size = QStringLiteral("%1 KiB").arg(r.bytes / 1024.0, 0, 'f', 0);
  }
  const bool host = r.device < 0;
  return tr("<b>%1 %2</b> · %3<br>%4%5 → %6 (%7)")
             .arg(host ? tr("file") : tr("tile"))
             .arg(r.tile)
             .arg(stage_label(r.stage))
             .arg(size.isEmpty() ? QString() : size + QStringLiteral("<br>"))
             .arg(ms(r.t0 - origin_), ms(r.t1 - origin_), ms(r.t1 - r.t0)) +
         QStringLiteral("<br>") + who;
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  p.setFont(small);
  const QFontMetrics fm(small);
  if (job_.records.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter,
               tr("The timeline of the last job appears here: one lane per device stream, each tile a bar."));
    return;
  }
  // Legend on the right, the job's title in what is left of the line.
  p.setPen(palette().color(QPalette::WindowText));
  std::vector<StageKind> present;
  for (StageKind s : {StageKind::Decode, StageKind::Upload, StageKind::Kernel, StageKind::Download, StageKind::Compute,
                      StageKind::Encode})
    if (std::any_of(job_.records.begin(), job_.records.end(), [s](const StageRecord& r) { return r.stage == s; }))
      present.push_back(s);
  int x = width() - 8;
  for (auto it = present.rbegin(); it != present.rend(); ++it) {
    const QString label = stage_label(*it);
    const int w = fm.horizontalAdvance(label);
    x -= w;
    p.drawText(QRect(x, 2, w, kLegendHeight - 2), Qt::AlignVCenter, label);
    x -= 14;
    p.fillRect(QRect(x, kLegendHeight / 2 - 4, 10, 10), stage_color(*it));
    x -= 12;
  }
  const QString title = tr("%1 · wall %2").arg(job_.title, ms(job_.wall_s));
  p.drawText(QRect(8, 2, std::max(0, x - 16), kLegendHeight - 2), Qt::AlignLeft | Qt::AlignVCenter,
             fm.elidedText(title, Qt::ElideMiddle, std::max(0, x - 16)));
  // Axis.
  const QRect plot = plot_rect();
  const double step = tick_step(view1_ - view0_, std::max(2, plot.width() / 90));
  p.setPen(palette().color(QPalette::PlaceholderText));
  for (double t = std::ceil(view0_ / step) * step; t <= view1_ + 1e-12; t += step) {
    const double xx = x_of(origin_ + t);
    p.drawLine(QPointF(xx, kLegendHeight + kAxisHeight - 5), QPointF(xx, plot.bottom()));
    p.drawText(QRectF(xx - 40, kLegendHeight, 80, kAxisHeight - 6), Qt::AlignCenter,
               step < 1e-3 ? QStringLiteral("%1 ms").arg(t * 1e3, 0, 'f', 2)
                           : QStringLiteral("%1 ms").arg(t * 1e3, 0, 'f', step < 0.01 ? 1 : 0));
  }
  // Lanes.
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    const int y = plot.top() + static_cast<int>(i) * (kRow + kGap);
    p.fillRect(QRect(plot.left(), y, plot.width(), kRow), QColor(127, 127, 127, i % 2 ? 18 : 34));
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(QRect(6, y, kLabelWidth - 10, kRow), Qt::AlignLeft | Qt::AlignVCenter, lanes_[i].label);
  }
  p.setClipRect(plot.adjusted(0, 0, 1, 1));
  for (const auto& r : job_.records) {
    const int lane = lane_of(r);
    if (lane < 0) continue;
    const QRectF b = bar_rect(r, lane);
    if (b.right() < plot.left() || b.left() > plot.right()) continue;
    p.fillRect(b, stage_color(r.stage));
    if (b.width() > 3) {
      p.setPen(QColor(0, 0, 0, 80));
      p.drawLine(b.topRight(), b.bottomRight());
    }
    if (b.width() > fm.horizontalAdvance(QString::number(r.tile)) + 6) {
      p.setPen(QColor(15, 15, 15));
      p.drawText(b, Qt::AlignCenter, QString::number(r.tile));
    }
  }
}

bool TimelineView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    if (const StageRecord* r = record_at(help->pos())) QToolTip::showText(help->globalPos(), describe(*r), this);
    else QToolTip::hideText();
    return true;
  }
  return QWidget::event(e);
}

void TimelineView::wheelEvent(QWheelEvent* e) {
  if (job_.records.empty()) return;
  const double factor = std::pow(0.8, e->angleDelta().y() / 120.0);
  const double anchor = t_of(e->position().x()) - origin_;
  const double len = std::clamp((view1_ - view0_) * factor, span_ * 1e-4, span_);
  const double frac = (anchor - view0_) / (view1_ - view0_);
  view0_ = std::clamp(anchor - frac * len, 0.0, span_ - len);
  view1_ = view0_ + len;
  update();
  e->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
  dragging_ = true;
  drag_x_ = e->position().x();
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  if (!dragging_) return;
  const double dt = (e->position().x() - drag_x_) / plot_rect().width() * (view1_ - view0_);
  const double len = view1_ - view0_;
  view0_ = std::clamp(view0_ - dt, 0.0, span_ - len);
  view1_ = view0_ + len;
  drag_x_ = e->position().x();
  update();
}

void TimelineView::mouseReleaseEvent(QMouseEvent*) { dragging_ = false; }

void TimelineView::mouseDoubleClickEvent(QMouseEvent*) {
  view0_ = 0;
  view1_ = span_;
  update();
}

}  // namespace tf::gui
