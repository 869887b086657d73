#include "param_editor.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QToolButton>
#include <algorithm>
#include <cmath>

namespace tf::gui {

namespace {
using Kind = ParamInfo::Kind;
// The slider's curve: linear for narrow ranges, t^2 for wide ones, t^4 for the hundreds (sigma up
// to 680, radius up to 2047), so that the everyday small values keep most of the slider.
double curve(const ParamInfo& p) {
  const double range = p.max - p.min;
  return range > 200 ? 4 : range > 20 ? 2 : 1;
}
QString qs(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

int ParamEditor::slider_position(const ParamInfo& p, double v) {
  if (p.max <= p.min) return 0;
  double t = std::clamp((v - p.min) / (p.max - p.min), 0.0, 1.0);
  t = std::pow(t, 1 / curve(p));
  return static_cast<int>(std::lround(t * kSliderSteps));
}

double ParamEditor::slider_value(const ParamInfo& p, int position) {
  double t = std::clamp(position / double(kSliderSteps), 0.0, 1.0);
  t = std::pow(t, curve(p));
  double v = p.min + t * (p.max - p.min);
  if (p.kind == Kind::Integer) return std::round(v);
  // Two decimals, like the spin box: the spec then says exactly what the panel shows.
  return std::clamp(std::round(v * 100) / 100, p.min, p.max);
}

ParamEditor::ParamEditor(const ParamInfo& info, QWidget* parent) : QWidget(parent), info_(info) {
  setObjectName(QStringLiteral("param.%1").arg(qs(info.name)));
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(0, 0, 0, 0);
  setToolTip(qs(info.help));
  switch (info.kind) {
    case Kind::Number:
    case Kind::Integer: {
      slider_ = new QSlider(Qt::Horizontal, this);
      slider_->setObjectName(objectName() + ".slider");
      slider_->setRange(0, kSliderSteps);
      slider_->setToolTip(qs(info.help));
      row->addWidget(slider_, 1);
      QAbstractSpinBox* spin = nullptr;
      if (info.kind == Kind::Number) {
        number_ = new QDoubleSpinBox(this);
        number_->setDecimals(2);
        number_->setRange(info.min, info.max);
        number_->setSingleStep(info.max - info.min > 5 ? 0.1 : 0.05);
        spin = number_;
        connect(number_, &QDoubleSpinBox::valueChanged, this, [this](double v) { set_number(v); });
      } else {
        integer_ = new QSpinBox(this);
        integer_->setRange(static_cast<int>(info.min), static_cast<int>(info.max));
        spin = integer_;
        connect(integer_, &QSpinBox::valueChanged, this, [this](int v) { set_number(v); });
      }
      spin->setObjectName(objectName() + ".spin");
      spin->setKeyboardTracking(false);
      spin->setMinimumWidth(72);
      spin->setToolTip(QStringLiteral("%1 (%2 – %3, default %4)")
                           .arg(qs(info.help))
                           .arg(info.min)
                           .arg(info.max)
                           .arg(info.default_value));
      row->addWidget(spin);
      connect(slider_, &QSlider::valueChanged, this, [this](int pos) {
        if (!updating_) set_number(slider_value(info_, pos));
      });
      break;
    }
    case Kind::Choice:
      choice_ = new QComboBox(this);
      choice_->setObjectName(objectName() + ".choice");
      for (const auto& c : info.choices) choice_->addItem(qs(c));
      row->addWidget(choice_, 1);
      connect(choice_, &QComboBox::currentIndexChanged, this, [this] {
        if (!updating_) emit edited();
      });
      break;
    case Kind::Bool:
      check_ = new QCheckBox(qs(info.help), this);
      check_->setObjectName(objectName() + ".check");
      row->addWidget(check_, 1);
      connect(check_, &QCheckBox::toggled, this, [this] {
        if (!updating_) emit edited();
      });
      break;
    case Kind::Path: {
      path_ = new QLineEdit(this);
      path_->setObjectName(objectName() + ".path");
      auto* browse = new QToolButton(this);
      browse->setText(QStringLiteral("…"));
      row->addWidget(path_, 1);
      row->addWidget(browse);
      connect(path_, &QLineEdit::editingFinished, this, [this] {
        if (!updating_) emit edited();
      });
      connect(browse, &QToolButton::clicked, this, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Choose a file"), path_->text());
        if (!f.isEmpty()) {
          path_->setText(f);
          emit edited();
        }
      });
      break;
    }
  }
  read_from(FilterEntry{});
}

void ParamEditor::set_number(double v) {
  if (updating_) return;
  {
    updating_ = true;
    const QSignalBlocker b1(slider_), b2(number_), b3(integer_);
    if (number_) number_->setValue(v);
    if (integer_) integer_->setValue(static_cast<int>(std::lround(v)));
    if (slider_) slider_->setValue(slider_position(info_, v));
    updating_ = false;
  }
  emit edited();
}

void ParamEditor::read_from(const FilterEntry& e) {
  updating_ = true;
  const QSignalBlocker b1(slider_), b2(number_), b3(integer_), b4(choice_), b5(check_), b6(path_);
  auto num = e.numbers.find(info_.name);
  const double v = num != e.numbers.end() ? num->second : info_.default_value;
  if (number_) number_->setValue(v);
  if (integer_) integer_->setValue(static_cast<int>(std::lround(v)));
  if (slider_) slider_->setValue(slider_position(info_, v));
  if (check_) check_->setChecked(v != 0);
  if (choice_) {
    auto t = e.texts.find(info_.name);
    choice_->setCurrentText(qs(t != e.texts.end() ? t->second : info_.default_text));
  }
  updating_ = false;
}

void ParamEditor::write_to(FilterEntry& e) const {
  if (number_) e.numbers[info_.name] = number_->value();
  if (integer_) e.numbers[info_.name] = integer_->value();
  if (check_) e.numbers[info_.name] = check_->isChecked() ? 1 : 0;
  if (choice_) e.texts[info_.name] = choice_->currentText().toStdString();
}

}  // namespace tf::gui
