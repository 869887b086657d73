// The central image view: zoom (fit, 100%, wheel around the cursor, keyboard), pan by dragging, and
// a before/after comparison with a draggable split line (or either side alone). The "after" side
// shows the latest full-resolution result, with an interim region/proxy result painted over it
// until the full one arrives.
#pragma once
#include <QImage>
#include <QWidget>

#include "model/mip_levels.hpp"

namespace tf::gui {

class ImageView : public QWidget {
  Q_OBJECT
 public:
  enum class Compare { Split, After, Before };

  explicit ImageView(QWidget* parent = nullptr);

  void set_before(const ShownImage& image);                   // a new image: the after side is cleared
  void set_after(const ShownImage& image);                    // full-size result (clears the interim overlay)
  void set_overlay(const QImage& image, const QRect& shown);  // interim result for `shown` (image pixels)
  void clear_after();                                         // nothing filtered: the image alone
  // A sharper copy of part of the before image (`shown`, image pixels; `image` may have more pixels
  // than `shown`): a large document's region decoded at full resolution.
  void set_detail(const QImage& image, const QRectF& shown);
  const QImage& detail_image() const { return detail_; }
  // The same for the after side: that region filtered at full resolution, over the filtered
  // overview; it stays while the view pans or zooms, until a newer one replaces it.
  void set_after_detail(const QImage& image, const QRectF& shown);
  const QImage& after_detail_image() const { return after_detail_; }
  QRectF after_detail_rect() const { return after_detail_rect_; }
  const QImage& before_image() const { return before_.base; }
  const QImage& after_image() const { return after_.base; }
  bool has_result() const { return !after_.is_null() || !overlay_.isNull(); }

  void set_compare(Compare mode);
  Compare compare() const { return compare_; }
  void set_split(double fraction);  // 0..1 of the widget's width
  double split() const { return split_; }

  double zoom() const { return zoom_; }  // screen pixels per image pixel
  bool fitting() const { return fit_; }
  void zoom_fit();
  void zoom_actual();
  void zoom_in();
  void zoom_out();
  void set_zoom(double zoom, QPointF anchor_widget);
  QRect visible_image_rect() const;  // image pixels in view
  double device_zoom() const;        // zoom times the device pixel ratio

  QPointF to_image(QPointF widget_point) const;
  QPointF to_widget(QPointF image_point) const;

 signals:
  void view_changed();
  void zoom_changed(double zoom);
  void hover_pixel(QPoint image_pos, bool inside);

 protected:
  void paintEvent(QPaintEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  void leaveEvent(QEvent*) override;

 private:
  enum class Drag { None, Pan, Split };
  double fit_zoom() const;
  void clamp_center();
  double split_x() const;
  bool near_split(QPointF p) const;
  bool comparing() const { return compare_ == Compare::Split && !before_.is_null() && has_result(); }
  void draw_image(QPainter& p, const ShownImage& image, const QRectF& image_rect, const QRectF& clip) const;
  void draw_label(QPainter& p, const QString& text, QPointF anchor, bool right_aligned) const;
  void changed();

  ShownImage before_, after_;
  QImage overlay_;
  QRect overlay_rect_;
  QImage detail_, after_detail_;
  QRectF detail_rect_, after_detail_rect_;
  double zoom_ = 1;
  QPointF center_;  // image point at the widget's centre
  bool fit_ = true;
  Compare compare_ = Compare::Split;
  double split_ = 0.5;
  Drag drag_ = Drag::None;
  QPointF last_;
};

}  // namespace tf::gui
