// The filter panel (left dock): the chain (add from core's catalog, remove, reorder), the selected
// filter's parameters as widgets generated from its ParamInfo (or the kernel grid for "custom"),
// the border mode, the devices, live preview on/off and Apply.
#pragma once
#include <QWidget>
#include <vector>

#include "model/filter_entry.hpp"

class QListWidget;
class QMenu;
class QToolButton;
class QGroupBox;
class QFormLayout;
class QLabel;
class QComboBox;
class QDoubleSpinBox;
class QCheckBox;
class QPushButton;
class QHBoxLayout;

namespace tf::gui {

class DeviceChoice;
class KernelEditor;
class ParamEditor;

// The border modes, each with its BorderMode as int data (the panel's and the batch dialog's list).
void add_border_modes(QComboBox* box);

class FilterPanel : public QWidget {
  Q_OBJECT
 public:
  explicit FilterPanel(QWidget* parent = nullptr);

  ChainSettings settings() const;
  void set_settings(const ChainSettings& settings);  // emits chain_changed()
  void clear_chain();
  void add_filter(const std::string& name);  // appends the catalog defaults and selects it
  int selected() const;
  void select(int row);

  QString devices() const;
  void set_devices(const QString& spec);
  bool live_preview() const;
  QMenu* presets_menu() const;  // filled by the main window
  void set_applying(bool applying);
  void set_has_image(bool has_image);  // Apply and Preview need one

 signals:
  void chain_changed();
  void devices_changed(const QString& spec);
  void apply_requested();
  void preview_requested();
  void error(const QString& message);

 private:
  QGroupBox* build_chain_box();
  QGroupBox* build_params_box();
  QGroupBox* build_job_box();
  QHBoxLayout* build_action_row();
  void connect_widgets();
  void rebuild_list();
  void show_parameters();
  void entry_edited();
  void move_selected(int delta);
  void update_buttons();

  std::vector<FilterEntry> chain_;
  QListWidget* list_ = nullptr;
  QToolButton* add_ = nullptr;
  QToolButton* presets_ = nullptr;
  QToolButton* remove_ = nullptr;
  QToolButton* up_ = nullptr;
  QToolButton* down_ = nullptr;
  QGroupBox* params_box_ = nullptr;
  QFormLayout* params_form_ = nullptr;
  QLabel* summary_ = nullptr;
  std::vector<ParamEditor*> editors_;
  KernelEditor* kernel_editor_ = nullptr;
  QComboBox* border_ = nullptr;
  QDoubleSpinBox* border_value_ = nullptr;
  DeviceChoice* devices_ = nullptr;
  QCheckBox* live_ = nullptr;
  QPushButton* preview_ = nullptr;
  QPushButton* apply_ = nullptr;
  bool has_image_ = true;
};

}  // namespace tf::gui
