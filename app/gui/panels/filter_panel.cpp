#include "filter_panel.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>

#include "device_choice.hpp"
#include "kernel_editor.hpp"
#include "param_editor.hpp"

namespace tf::gui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString pretty(const std::string& name) {
  QString s = qs(name);
  if (!s.isEmpty()) s[0] = s[0].toUpper();
  return s;
}

QToolButton* tool_button(QWidget* parent, const QString& text, const QString& name, QStyle::StandardPixmap icon) {
  auto* b = new QToolButton(parent);
  b->setObjectName(name);
  b->setToolTip(text);
  b->setIcon(parent->style()->standardIcon(icon));
  b->setAutoRaise(true);
  return b;
}

}  // namespace

void add_border_modes(QComboBox* box) {
  for (auto m :
       {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Constant, BorderMode::Wrap})
    box->addItem(qs(to_string(m)), static_cast<int>(m));
}

FilterPanel::FilterPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("filterPanel");
  setMinimumWidth(310);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 8, 8, 8);

  layout->addWidget(build_chain_box());
  layout->addWidget(build_params_box(), 1);
  layout->addWidget(build_job_box());
  layout->addLayout(build_action_row());
  connect_widgets();
  border_value_->setEnabled(false);
  preview_->setEnabled(false);
  rebuild_list();
  show_parameters();
  update_buttons();
}

QGroupBox* FilterPanel::build_chain_box() {
  auto* chain_box = new QGroupBox(tr("Filter chain"), this);
  auto* chain_layout = new QVBoxLayout(chain_box);
  list_ = new QListWidget(chain_box);
  list_->setObjectName("chainList");
  list_->setMinimumHeight(70);
  list_->setMaximumHeight(120);
  chain_layout->addWidget(list_);
  auto* buttons = new QHBoxLayout;
  add_ = new QToolButton(chain_box);
  add_->setObjectName("addFilter");
  add_->setText(tr("Add filter"));
  add_->setIcon(style()->standardIcon(QStyle::SP_FileDialogNewFolder));
  add_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  add_->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(add_);
  for (const auto& f : filter_catalog()) {
    QAction* a = menu->addAction(pretty(f.name), this, [this, name = f.name] { add_filter(name); });
    a->setObjectName(QStringLiteral("add.%1").arg(qs(f.name)));
    a->setToolTip(qs(f.summary));
    a->setStatusTip(qs(f.summary));
  }
  menu->setToolTipsVisible(true);
  add_->setMenu(menu);
  remove_ = tool_button(chain_box, tr("Remove the selected filter"), "removeFilter", QStyle::SP_TrashIcon);
  up_ = tool_button(chain_box, tr("Move up (runs earlier)"), "moveUp", QStyle::SP_ArrowUp);
  down_ = tool_button(chain_box, tr("Move down (runs later)"), "moveDown", QStyle::SP_ArrowDown);
  presets_ = new QToolButton(chain_box);
  presets_->setObjectName("presetsButton");
  presets_->setText(tr("Presets"));
  presets_->setToolTip(tr("Load a saved chain (Filters ▸ Presets, or drop a .json file on the window)"));
  presets_->setPopupMode(QToolButton::InstantPopup);
  presets_->setMenu(new QMenu(presets_));
  buttons->addWidget(add_);
  buttons->addWidget(presets_);
  buttons->addStretch(1);
  buttons->addWidget(up_);
  buttons->addWidget(down_);
  buttons->addWidget(remove_);
  chain_layout->addLayout(buttons);

  return chain_box;
}

QGroupBox* FilterPanel::build_params_box() {
  params_box_ = new QGroupBox(tr("Parameters"), this);
  params_box_->setObjectName("paramsBox");
  auto* params_outer = new QVBoxLayout(params_box_);
  summary_ = new QLabel(params_box_);
  summary_->setWordWrap(true);
  summary_->setObjectName("filterSummary");
  QPalette dim = summary_->palette();
  dim.setColor(QPalette::WindowText, dim.color(QPalette::PlaceholderText));
  summary_->setPalette(dim);
  params_outer->addWidget(summary_);
  params_form_ = new QFormLayout;
  params_form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  params_outer->addLayout(params_form_);
  kernel_editor_ = new KernelEditor(params_box_);
  params_outer->addWidget(kernel_editor_);
  params_outer->addStretch(1);

  return params_box_;
}

QGroupBox* FilterPanel::build_job_box() {
  auto* job_box = new QGroupBox(tr("Job"), this);
  auto* job_form = new QFormLayout(job_box);
  border_ = new QComboBox(job_box);
  border_->setObjectName("borderMode");
  add_border_modes(border_);
  border_->setToolTip(tr("How pixels outside the image are made up (OpenCV's meanings)"));
  border_value_ = new QDoubleSpinBox(job_box);
  border_value_->setObjectName("borderValue");
  border_value_->setRange(0, 65535);
  border_value_->setDecimals(1);
  border_value_->setKeyboardTracking(false);
  border_value_->setToolTip(tr("Value outside the image for the constant border, in pixel units"));
  auto* border_row = new QHBoxLayout;
  border_row->addWidget(border_, 1);
  border_row->addWidget(border_value_);
  job_form->addRow(tr("Border"), border_row);
  devices_ = new DeviceChoice(job_box);
  job_form->addRow(tr("Devices"), devices_);

  return job_box;
}

QHBoxLayout* FilterPanel::build_action_row() {
  auto* actions = new QHBoxLayout;
  live_ = new QCheckBox(tr("Live preview"), this);
  live_->setObjectName("livePreview");
  live_->setChecked(true);
  preview_ = new QPushButton(tr("Preview"), this);
  preview_->setObjectName("previewButton");
  apply_ = new QPushButton(tr("Apply"), this);
  apply_->setObjectName("applyButton");
  apply_->setDefault(true);
  apply_->setToolTip(tr("Filter the whole image and make it the new image (undo with Ctrl+Z)"));
  actions->addWidget(live_);
  actions->addStretch(1);
  actions->addWidget(preview_);
  actions->addWidget(apply_);

  return actions;
}

void FilterPanel::connect_widgets() {
  connect(list_, &QListWidget::currentRowChanged, this, [this] {
    show_parameters();
    update_buttons();
  });
  connect(remove_, &QToolButton::clicked, this, [this] {
    const int row = selected();
    if (row < 0) return;
    chain_.erase(chain_.begin() + row);
    rebuild_list();
    select(std::min(row, static_cast<int>(chain_.size()) - 1));
    emit chain_changed();
  });
  connect(up_, &QToolButton::clicked, this, [this] { move_selected(-1); });
  connect(down_, &QToolButton::clicked, this, [this] { move_selected(1); });
  connect(kernel_editor_, &KernelEditor::edited, this, &FilterPanel::entry_edited);
  connect(kernel_editor_, &KernelEditor::error, this, &FilterPanel::error);
  connect(border_, &QComboBox::currentIndexChanged, this, [this] {
    border_value_->setEnabled(border_->currentData().toInt() == static_cast<int>(BorderMode::Constant));
    emit chain_changed();
  });
  connect(border_value_, &QDoubleSpinBox::valueChanged, this, [this] { emit chain_changed(); });
  connect(devices_, &DeviceChoice::spec_changed, this, &FilterPanel::devices_changed);
  connect(live_, &QCheckBox::toggled, this, [this](bool on) {
    preview_->setEnabled(!on && has_image_);
    if (on) emit chain_changed();
  });
  connect(preview_, &QPushButton::clicked, this, &FilterPanel::preview_requested);
  connect(apply_, &QPushButton::clicked, this, &FilterPanel::apply_requested);
}

ChainSettings FilterPanel::settings() const {
  ChainSettings s;
  s.filters = chain_;
  s.border.mode = static_cast<BorderMode>(border_->currentData().toInt());
  s.border.value = static_cast<float>(border_value_->value());
  return s;
}

void FilterPanel::set_settings(const ChainSettings& s) {
  chain_ = s.filters;
  {
    const QSignalBlocker b1(border_), b2(border_value_);
    border_->setCurrentIndex(border_->findData(static_cast<int>(s.border.mode)));
    border_value_->setValue(s.border.value);
    border_value_->setEnabled(s.border.mode == BorderMode::Constant);
  }
  rebuild_list();
  select(chain_.empty() ? -1 : 0);
  emit chain_changed();
}

void FilterPanel::clear_chain() {
  ChainSettings s = settings();
  s.filters.clear();
  set_settings(s);
}

void FilterPanel::add_filter(const std::string& name) {
  const FilterInfo* info = find_filter(name);
  if (!info) return;
  if (chain_.size() >= kMaxChainLength) {
    emit error(tr("A chain holds at most %1 filters.").arg(kMaxChainLength));
    return;
  }
  chain_.push_back(default_entry(*info));
  rebuild_list();
  select(static_cast<int>(chain_.size()) - 1);
  emit chain_changed();
}

int FilterPanel::selected() const { return list_->currentRow(); }

void FilterPanel::select(int row) {
  list_->setCurrentRow(row);
  show_parameters();
  update_buttons();
}

QString FilterPanel::devices() const { return devices_->spec(); }
void FilterPanel::set_devices(const QString& spec) { devices_->set_spec(spec); }
bool FilterPanel::live_preview() const { return live_->isChecked(); }
QMenu* FilterPanel::presets_menu() const { return presets_->menu(); }

void FilterPanel::set_has_image(bool has_image) {
  has_image_ = has_image;
  apply_->setEnabled(has_image_);
  preview_->setEnabled(has_image_ && !live_->isChecked());
  apply_->setToolTip(has_image_ ? tr("Filter the whole image and make it the new image (undo with Ctrl+Z)")
                                : tr("Open an image first"));
}

void FilterPanel::set_applying(bool applying) {
  apply_->setEnabled(!applying && has_image_);
  apply_->setText(applying ? tr("Applying…") : tr("Apply"));
}

void FilterPanel::rebuild_list() {
  const QSignalBlocker block(list_);
  const int row = list_->currentRow();
  list_->clear();
  for (std::size_t i = 0; i < chain_.size(); ++i)
    list_->addItem(QStringLiteral("%1. %2").arg(i + 1).arg(entry_label(chain_[i])));
  if (chain_.empty()) {
    auto* hint = new QListWidgetItem(tr("No filter yet — use “Add filter”"));
    hint->setFlags(Qt::NoItemFlags);
    list_->addItem(hint);
  } else {
    list_->setCurrentRow(std::clamp(row, 0, static_cast<int>(chain_.size()) - 1));
  }
}

void FilterPanel::show_parameters() {
  for (auto* e : editors_) {
    params_form_->removeRow(e);
  }
  editors_.clear();
  const int row = selected();
  const bool valid = row >= 0 && row < static_cast<int>(chain_.size());
  params_box_->setEnabled(valid);
  kernel_editor_->setVisible(valid && chain_[row].is_custom());
  if (!valid) {
    params_box_->setTitle(tr("Parameters"));
    summary_->setText(tr("Pick a filter from “Add filter”; its parameters appear here."));
    return;
  }
  const FilterEntry& entry = chain_[row];
  const FilterInfo* info = find_filter(entry.filter);
  params_box_->setTitle(tr("Parameters — %1").arg(pretty(entry.filter)));
  summary_->setText(info ? qs(info->summary) : QString());
  if (!info) return;
  for (const auto& p : info->params) {
    if (p.kind == ParamInfo::Kind::Path && entry.is_custom()) continue;  // the grid stands for the file
    auto* editor = new ParamEditor(p, params_box_);
    editor->read_from(entry);
    connect(editor, &ParamEditor::edited, this, &FilterPanel::entry_edited);
    params_form_->addRow(pretty(p.name), editor);
    editors_.push_back(editor);
  }
  if (info->params.empty()) summary_->setText(summary_->text() + tr("\nThis filter has no parameters."));
  if (entry.is_custom()) kernel_editor_->set_kernel(entry.kernel);
}

void FilterPanel::entry_edited() {
  const int row = selected();
  if (row < 0 || row >= static_cast<int>(chain_.size())) return;
  FilterEntry& e = chain_[row];
  for (auto* ed : editors_) ed->write_to(e);
  if (e.is_custom()) e.kernel = kernel_editor_->kernel();
  list_->item(row)->setText(QStringLiteral("%1. %2").arg(row + 1).arg(entry_label(e)));
  emit chain_changed();
}

void FilterPanel::move_selected(int delta) {
  const int row = selected(), to = row + delta;
  if (row < 0 || to < 0 || to >= static_cast<int>(chain_.size())) return;
  std::swap(chain_[row], chain_[to]);
  rebuild_list();
  select(to);
  emit chain_changed();
}

void FilterPanel::update_buttons() {
  const int row = selected();
  const int n = static_cast<int>(chain_.size());
  remove_->setEnabled(row >= 0 && row < n);
  up_->setEnabled(row > 0 && row < n);
  down_->setEnabled(row >= 0 && row + 1 < n);
}

}  // namespace tf::gui
