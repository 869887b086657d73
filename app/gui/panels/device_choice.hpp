// A combo box that picks a device selection spec (core's --devices syntax): all devices, all GPUs,
// one GPU, the CPU, one CPU worker, or any spec typed in ("0,cpu:2"). Used by the filter panel, the
// batch dialog and the speedup demo. The list is made again, keeping the choice, when GPU discovery
// finishes.
#pragma once
#include <QComboBox>

namespace tf::gui {

class DeviceChoice : public QComboBox {
  Q_OBJECT
 public:
  explicit DeviceChoice(QWidget* parent = nullptr);
  QString spec() const;
  void set_spec(const QString& spec);  // adds an entry for specs not in the list

 signals:
  void spec_changed(const QString& spec);

 private:
  void fill(const QString& keep);  // the entries for the GPUs found so far, with `keep` chosen
  int last_index_ = 0;
};

}  // namespace tf::gui
