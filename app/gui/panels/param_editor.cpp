#include "param_editor.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QMouseEvent>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QToolButton>
#include <algorithm>
#include <cmath>

namespace tf::gui {

namespace {
using Kind = ParamInfo::Kind;
QString qs(const std::string& s) { return QString::fromStdString(s); }

// The slider's unit interval for v in [lo, hi]: log(v/lo) for a positive minimum (sigma), log(1 + v -
// lo) otherwise (radius from 0 or 1), so each step is about the same ratio.
double log_fraction(double v, double lo, double hi) {
  if (lo > 0) return std::log(v / lo) / std::log(hi / lo);
  return std::log1p(v - lo) / std::log1p(hi - lo);
}
double log_value(double t, double lo, double hi) {
  if (lo > 0) return lo * std::exp(t * std::log(hi / lo));
  return lo + std::expm1(t * std::log1p(hi - lo));
}
}  // namespace

bool ParamEditor::logarithmic(const ParamInfo& p) { return p.max - p.min > 100; }

double ParamEditor::soft_max(const ParamInfo& p) {
  // Sigma 32 is a 193-tap blur, radius 100 a 201-tap window: past that is rare in a photo, and slow.
  if (!logarithmic(p)) return p.max;
  return std::min(p.max, p.kind == Kind::Integer ? 100.0 : 32.0);
}

int ParamEditor::slider_position(const ParamInfo& p, double v) {
  const double hi = soft_max(p);
  if (hi <= p.min) return 0;
  v = std::clamp(v, p.min, hi);
  const double t = logarithmic(p) ? log_fraction(v, p.min, hi) : (v - p.min) / (hi - p.min);
  return static_cast<int>(std::lround(std::clamp(t, 0.0, 1.0) * kSliderSteps));
}

double ParamEditor::slider_value(const ParamInfo& p, int position) {
  const double hi = soft_max(p);
  const double t = std::clamp(position / double(kSliderSteps), 0.0, 1.0);
  double v = logarithmic(p) ? log_value(t, p.min, hi) : p.min + t * (hi - p.min);
  if (p.kind == Kind::Integer) return std::clamp(std::round(v), p.min, hi);
  // Two decimals, like the spin box: the spec then says exactly what the panel shows.
  return std::clamp(std::round(v * 100) / 100, p.min, hi);
}

void ParamEditor::build_number(QHBoxLayout* row) {
  const ParamInfo& info = info_;
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setObjectName(objectName() + ".slider");
  slider_->setRange(0, kSliderSteps);
  slider_->setToolTip(qs(info.help) + tr(" (right-click to type a value)"));
  slider_->installEventFilter(this);
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
    if (zero_means_auto(info)) integer_->setSpecialValueText(tr("auto"));
    spin = integer_;
    connect(integer_, &QSpinBox::valueChanged, this, [this](int v) { set_number(v); });
  }
  spin_ = spin;
  spin->setObjectName(objectName() + ".spin");
  spin->setKeyboardTracking(false);
  spin->setMinimumWidth(72);
  QString tip =
      tr("%1 (%2 – %3, default %4)")
          .arg(qs(info.help))
          .arg(info.min)
          .arg(info.max)
          .arg(zero_means_auto(info) && info.default_value == 0 ? tr("auto") : QString::number(info.default_value));
  if (soft_max(info) < info.max)
    tip += tr("; the slider covers %1 – %2, type larger values here").arg(info.min).arg(soft_max(info));
  spin->setToolTip(tip);
  row->addWidget(spin);
  connect(slider_, &QSlider::valueChanged, this, [this](int pos) {
    if (!updating_) set_number(slider_value(info_, pos));
  });
}

ParamEditor::ParamEditor(const ParamInfo& info, QWidget* parent) : QWidget(parent), info_(info) {
  setObjectName(QStringLiteral("param.%1").arg(qs(info.name)));
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(0, 0, 0, 0);
  setToolTip(qs(info.help));
  switch (info.kind) {
    case Kind::Number:
    case Kind::Integer: build_number(row); break;
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

void ParamEditor::start_typing() {
  if (!spin_) return;
  spin_->setFocus(Qt::OtherFocusReason);
  spin_->selectAll();
}

bool ParamEditor::eventFilter(QObject* watched, QEvent* event) {
  // The right button press itself, not only the context menu event that some platforms make of it
  // on release (and the menu key makes without a click).
  const bool right_press =
      event->type() == QEvent::MouseButtonPress && static_cast<QMouseEvent*>(event)->button() == Qt::RightButton;
  if (watched == slider_ && (right_press || event->type() == QEvent::ContextMenu)) {
    start_typing();
    return true;
  }
  return QWidget::eventFilter(watched, event);
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
