// One row of the filter panel, generated from a ParamInfo of core's catalog: a slider with a spin
// box for numbers (range and default from the catalog), a combo box for choices, a check box for
// booleans, a line edit with a browse button for paths. Like darktable's sliders, a wide range gets
// a soft range on a logarithmic slider while the spin box takes any value of the full range, and a
// derived default (radius 0 = ceil(3 sigma), zero_means_auto) reads "auto". A right-click on the
// slider (darktable's "right-click to type") puts the cursor in the spin box with its text selected.
#pragma once
#include <QWidget>

#include "model/filter_entry.hpp"

class QAbstractSpinBox;
class QSlider;
class QDoubleSpinBox;
class QSpinBox;
class QComboBox;
class QCheckBox;
class QLineEdit;
class QHBoxLayout;

namespace tf::gui {

class ParamEditor : public QWidget {
  Q_OBJECT
 public:
  ParamEditor(const ParamInfo& info, QWidget* parent = nullptr);

  const ParamInfo& info() const { return info_; }
  void read_from(const FilterEntry& entry);  // shows the entry's value (no edited() signal)
  void write_to(FilterEntry& entry) const;

  // Slider position (0..kSliderSteps) for a value and back. A range wider than 100 units (sigma
  // 0.1..680, radius 0..2047) spans only its soft range, min..soft_max (sigma 32, radius 100), on a
  // logarithmic scale, so that a drag moves sigma by a steady ratio and never jumps into the
  // hundreds; values past the soft range are typed in the spin box (the slider then rests at its
  // end). Narrow ranges are linear.
  static constexpr int kSliderSteps = 1000;
  static int slider_position(const ParamInfo& info, double value);
  static double slider_value(const ParamInfo& info, int position);
  static double soft_max(const ParamInfo& info);
  static bool logarithmic(const ParamInfo& info);

  // Focuses the number's spin box with its text selected, ready for a typed value (any of the full
  // range, past the slider's soft range too). A right-click on the slider calls it.
  void start_typing();

 signals:
  void edited();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void build_number(QHBoxLayout* row);
  void set_number(double v);
  ParamInfo info_;
  QSlider* slider_ = nullptr;
  QDoubleSpinBox* number_ = nullptr;
  QSpinBox* integer_ = nullptr;
  QAbstractSpinBox* spin_ = nullptr;  // number_ or integer_
  QComboBox* choice_ = nullptr;
  QCheckBox* check_ = nullptr;
  QLineEdit* path_ = nullptr;
  bool updating_ = false;
};

}  // namespace tf::gui
