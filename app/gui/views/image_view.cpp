#include "image_view.hpp"

#include <QKeyEvent>
#include <QPainter>
#include <QPainterPath>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "platform/release_later.hpp"

namespace tf::gui {

namespace {
constexpr double kMaxZoom = 32.0;
constexpr double kStep = 1.25;
constexpr int kSplitGrab = 7;  // pixels either side of the split line that grab it
}  // namespace

ImageView::ImageView(QWidget* parent) : QWidget(parent) {
  setObjectName("imageView");
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumSize(200, 150);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void ImageView::set_detail(const QImage& image, const QRectF& shown) {
  detail_ = image;
  detail_rect_ = shown;
  update();
}

void ImageView::set_after_detail(const QImage& image, const QRectF& shown) {
  after_detail_ = image;
  after_detail_rect_ = shown;
  update();
}

void ImageView::set_before(const ShownImage& image) {
  const bool same_size = image.base.size() == before_.base.size();
  release_later(std::exchange(before_, image));
  release_later(std::exchange(after_, {}));
  overlay_ = {};
  detail_ = {};
  after_detail_ = {};
  if (!same_size || fit_) zoom_fit();
  else update();
}

void ImageView::set_after(const ShownImage& image) {
  release_later(std::exchange(after_, image));
  overlay_ = {};
  update();
}

void ImageView::set_overlay(const QImage& image, const QRect& shown) {
  overlay_ = image;
  overlay_rect_ = shown;
  update();
}

void ImageView::clear_after() {
  release_later(std::exchange(after_, {}));
  overlay_ = {};
  after_detail_ = {};
  update();
}

void ImageView::set_compare(Compare mode) {
  compare_ = mode;
  update();
}

void ImageView::set_split(double fraction) {
  split_ = std::clamp(fraction, 0.0, 1.0);
  update();
}

double ImageView::fit_zoom() const {
  if (before_.is_null()) return 1;
  const double margin = 8;
  return std::max(
      1e-3, std::min((width() - 2 * margin) / before_.base.width(), (height() - 2 * margin) / before_.base.height()));
}

void ImageView::zoom_fit() {
  fit_ = true;
  zoom_ = fit_zoom();
  center_ = QPointF(before_.base.width() / 2.0, before_.base.height() / 2.0);
  changed();
}

void ImageView::zoom_actual() { set_zoom(1.0 / devicePixelRatioF(), rect().center()); }
void ImageView::zoom_in() { set_zoom(zoom_ * kStep, rect().center()); }
void ImageView::zoom_out() { set_zoom(zoom_ / kStep, rect().center()); }

void ImageView::set_zoom(double zoom, QPointF anchor) {
  if (before_.is_null()) return;
  const double min_zoom = std::min(fit_zoom(), 1.0) / 4;
  zoom = std::clamp(zoom, min_zoom, kMaxZoom);
  const QPointF fixed = to_image(anchor);  // the image point under the anchor stays there
  zoom_ = zoom;
  center_ = fixed - (anchor - QPointF(width() / 2.0, height() / 2.0)) / zoom_;
  fit_ = false;
  clamp_center();
  changed();
}

double ImageView::device_zoom() const { return zoom_ * devicePixelRatioF(); }

QPointF ImageView::to_image(QPointF w) const { return (w - QPointF(width() / 2.0, height() / 2.0)) / zoom_ + center_; }
QPointF ImageView::to_widget(QPointF i) const { return (i - center_) * zoom_ + QPointF(width() / 2.0, height() / 2.0); }

QRect ImageView::visible_image_rect() const {
  if (before_.is_null()) return {};
  const QPointF a = to_image(QPointF(0, 0)), b = to_image(QPointF(width(), height()));
  const QRect r(QPoint(static_cast<int>(std::floor(a.x())), static_cast<int>(std::floor(a.y()))),
                QPoint(static_cast<int>(std::ceil(b.x())) - 1, static_cast<int>(std::ceil(b.y())) - 1));
  return r.intersected(before_.base.rect());
}

void ImageView::clamp_center() {
  // Keep at least part of the image in view: the centre may not leave the image.
  center_.setX(std::clamp(center_.x(), 0.0, static_cast<double>(before_.base.width())));
  center_.setY(std::clamp(center_.y(), 0.0, static_cast<double>(before_.base.height())));
}

void ImageView::changed() {
  update();
  emit zoom_changed(zoom_);
  emit view_changed();
}

double ImageView::split_x() const { return std::round(split_ * width()); }
bool ImageView::near_split(QPointF p) const { return comparing() && std::abs(p.x() - split_x()) <= kSplitGrab; }

void ImageView::draw_image(QPainter& p, const ShownImage& shown, const QRectF& image_rect, const QRectF& clip) const {
  // Draws the part of `shown` (covering image_rect in image pixels) that falls inside `clip` (widget),
  // sampling the mip level nearest the screen's resolution.
  const QRectF target_all(to_widget(image_rect.topLeft()), to_widget(image_rect.bottomRight()));
  const QRectF target = target_all.intersected(clip);
  if (target.isEmpty() || shown.is_null()) return;
  const QImage& image = shown.level_for(device_zoom() * shown.base.width() / image_rect.width());
  const double sx = image.width() / image_rect.width(), sy = image.height() / image_rect.height();
  const QRectF source((target.left() - target_all.left()) / zoom_ * sx, (target.top() - target_all.top()) / zoom_ * sy,
                      target.width() / zoom_ * sx, target.height() / zoom_ * sy);
  p.drawImage(target, image, source);
}

void ImageView::draw_label(QPainter& p, const QString& text, QPointF anchor, bool right_aligned) const {
  const QFontMetrics fm(font());
  const QRectF box(0, 0, fm.horizontalAdvance(text) + 16, fm.height() + 6);
  QRectF r = box.translated(right_aligned ? anchor.x() - box.width() : anchor.x(), anchor.y());
  p.setPen(Qt::NoPen);
  p.setBrush(QColor(0, 0, 0, 150));
  p.drawRoundedRect(r, 4, 4);
  p.setPen(QColor(235, 235, 235));
  p.drawText(r, Qt::AlignCenter, text);
}

void ImageView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(38, 38, 40));
  if (before_.is_null()) {
    p.setPen(QColor(150, 150, 150));
    p.drawText(rect(), Qt::AlignCenter,
               tr("Open an image (Ctrl+O), drop one here, or pick a sample from File ▸ Open Sample"));
    return;
  }
  const QRectF whole(0, 0, before_.base.width(), before_.base.height());
  const QRectF image_on_screen = QRectF(to_widget(whole.topLeft()), to_widget(whole.bottomRight())).intersected(rect());
  if (before_.base.hasAlphaChannel()) {  // a checkerboard under transparent pixels
    p.save();
    p.setClipRect(image_on_screen);
    const int cell = 8;
    for (int y = static_cast<int>(image_on_screen.top()) / cell * cell; y < image_on_screen.bottom(); y += cell)
      for (int x = static_cast<int>(image_on_screen.left()) / cell * cell; x < image_on_screen.right(); x += cell)
        p.fillRect(x, y, cell, cell, ((x / cell + y / cell) % 2) ? QColor(90, 90, 90) : QColor(130, 130, 130));
    p.restore();
  }
  p.setRenderHint(QPainter::SmoothPixmapTransform, device_zoom() < 1.0);
  const bool split = comparing();
  const double sx = split_x();
  const QRectF before_clip = compare_ == Compare::Before || !has_result() ? QRectF(rect())
                             : split                                      ? QRectF(0, 0, sx, height())
                                                                          : QRectF();
  const QRectF after_clip = !has_result() || compare_ == Compare::Before ? QRectF()
                            : split                                      ? QRectF(sx, 0, width() - sx, height())
                                                                         : QRectF(rect());
  if (!before_clip.isEmpty()) {
    draw_image(p, before_, whole, before_clip.intersected(image_on_screen));
    if (!detail_.isNull()) draw_image(p, ShownImage(detail_), detail_rect_, before_clip.intersected(image_on_screen));
  }
  if (!after_clip.isEmpty()) {
    const QRectF clip = after_clip.intersected(image_on_screen);
    draw_image(p, after_.is_null() ? before_ : after_, whole, clip);
    if (!overlay_.isNull()) draw_image(p, ShownImage(overlay_), overlay_rect_, clip);
    if (!after_detail_.isNull()) draw_image(p, ShownImage(after_detail_), after_detail_rect_, clip);
  }
  if (split) {
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(QPen(QColor(255, 255, 255, 220), 2));
    p.drawLine(QPointF(sx, 0), QPointF(sx, height()));
    const QPointF c(sx, height() / 2.0);
    p.setBrush(QColor(255, 255, 255, 235));
    p.setPen(QPen(QColor(0, 0, 0, 90), 1));
    p.drawEllipse(c, 13, 13);
    p.setBrush(QColor(60, 60, 60));
    p.setPen(Qt::NoPen);
    for (int dir : {-1, 1}) {
      QPainterPath arrow;
      arrow.moveTo(c + QPointF(dir * 9, 0));
      arrow.lineTo(c + QPointF(dir * 3, -5));
      arrow.lineTo(c + QPointF(dir * 3, 5));
      arrow.closeSubpath();
      p.drawPath(arrow);
    }
    draw_label(p, tr("Before"), QPointF(sx - 8, 8), true);
    draw_label(p, tr("After"), QPointF(sx + 8, 8), false);
  } else if (has_result()) {
    draw_label(p, compare_ == Compare::Before ? tr("Before") : tr("After"), QPointF(8, 8), false);
  }
}

void ImageView::resizeEvent(QResizeEvent*) {
  if (fit_) zoom_fit();
  else emit view_changed();
}

void ImageView::wheelEvent(QWheelEvent* e) {
  const double steps = e->angleDelta().y() / 120.0;
  if (steps == 0) return;
  set_zoom(zoom_ * std::pow(kStep, steps), e->position());
  e->accept();
}

void ImageView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton && e->button() != Qt::MiddleButton) return;
  last_ = e->position();
  drag_ = e->button() == Qt::LeftButton && near_split(e->position()) ? Drag::Split : Drag::Pan;
  setCursor(drag_ == Drag::Split ? Qt::SplitHCursor : Qt::ClosedHandCursor);
}

void ImageView::mouseMoveEvent(QMouseEvent* e) {
  const QPointF pos = e->position();
  if (drag_ == Drag::Split) {
    set_split(pos.x() / std::max(1, width()));
  } else if (drag_ == Drag::Pan) {
    center_ -= (pos - last_) / zoom_;
    fit_ = false;
    clamp_center();
    last_ = pos;
    update();
    emit view_changed();
  } else {
    setCursor(near_split(pos) ? Qt::SplitHCursor : Qt::OpenHandCursor);
  }
  if (!before_.is_null()) {
    const QPointF ip = to_image(pos);
    const QPoint pixel(static_cast<int>(std::floor(ip.x())), static_cast<int>(std::floor(ip.y())));
    emit hover_pixel(pixel, before_.base.rect().contains(pixel));
  }
}

void ImageView::mouseReleaseEvent(QMouseEvent* e) {
  drag_ = Drag::None;
  setCursor(near_split(e->position()) ? Qt::SplitHCursor : Qt::OpenHandCursor);
}

void ImageView::mouseDoubleClickEvent(QMouseEvent* e) {
  if (near_split(e->position())) return;
  if (fit_) set_zoom(1.0 / devicePixelRatioF(), e->position());
  else zoom_fit();
}

void ImageView::keyPressEvent(QKeyEvent* e) {
  const double pan = 0.1 * std::min(width(), height()) / zoom_;
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoom_in(); break;
    case Qt::Key_Minus: zoom_out(); break;
    case Qt::Key_0: zoom_fit(); break;
    case Qt::Key_1: zoom_actual(); break;
    case Qt::Key_Left: center_.rx() -= pan; break;
    case Qt::Key_Right: center_.rx() += pan; break;
    case Qt::Key_Up: center_.ry() -= pan; break;
    case Qt::Key_Down: center_.ry() += pan; break;
    default: QWidget::keyPressEvent(e); return;
  }
  if (e->key() == Qt::Key_Left || e->key() == Qt::Key_Right || e->key() == Qt::Key_Up || e->key() == Qt::Key_Down) {
    fit_ = false;
    clamp_center();
    update();
    emit view_changed();
  }
}

void ImageView::leaveEvent(QEvent*) { emit hover_pixel({}, false); }

}  // namespace tf::gui
