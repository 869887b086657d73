// One row of the filter panel, generated from a ParamInfo of core's catalog: a slider with a spin
// box for numbers (range and default from the catalog), a combo box for choices, a check box for
// booleans, a line edit with a browse button for paths.
#pragma once
#include <QWidget>

#include "model/filter_entry.hpp"

class QSlider;
class QDoubleSpinBox;
class QSpinBox;
class QComboBox;
class QCheckBox;
class QLineEdit;

namespace tf::gui {

class ParamEditor : public QWidget {
  Q_OBJECT
 public:
  ParamEditor(const ParamInfo& info, QWidget* parent = nullptr);

  const ParamInfo& info() const { return info_; }
  void read_from(const FilterEntry& entry);  // shows the entry's value (no edited() signal)
  void write_to(FilterEntry& entry) const;

  // Slider position (0..kSliderSteps) for a value and back. Wide ranges get a power scale (square
  // over 20 units, fourth power over 200: sigma 0.1..680, radius 0..2047) so small values — the
  // common ones — are not crammed together.
  static constexpr int kSliderSteps = 1000;
  static int slider_position(const ParamInfo& info, double value);
  static double slider_value(const ParamInfo& info, int position);

 signals:
  void edited();

 private:
  void set_number(double v);
  ParamInfo info_;
  QSlider* slider_ = nullptr;
  QDoubleSpinBox* number_ = nullptr;
  QSpinBox* integer_ = nullptr;
  QComboBox* choice_ = nullptr;
  QCheckBox* check_ = nullptr;
  QLineEdit* path_ = nullptr;
  bool updating_ = false;
};

}  // namespace tf::gui
