// The custom kernel editor: a grid of taps with its size, the sum of the taps, a few starting
// points (box, sharpen, edge, emboss, motion blur) and loading/saving kernel text files in the
// format the CLI reads. Normalization is the filter's own "normalize" parameter.
#pragma once
#include <QWidget>

#include "tilefilter/filters/kernel_store.hpp"

class QSpinBox;
class QTableWidget;
class QLabel;

namespace tf::gui {

class KernelEditor : public QWidget {
  Q_OBJECT
 public:
  explicit KernelEditor(QWidget* parent = nullptr);
  void set_kernel(const KernelGrid& grid);  // no edited() signal
  const KernelGrid& kernel() const { return grid_; }

 signals:
  void edited();
  void error(const QString& message);

 private:
  void rebuild_table();
  void update_sum();
  void load_file();
  void save_file();
  void commit(const KernelGrid& grid);
  KernelGrid grid_;
  QSpinBox* width_ = nullptr;
  QSpinBox* height_ = nullptr;
  QTableWidget* table_ = nullptr;
  QLabel* sum_ = nullptr;
  bool updating_ = false;
};

}  // namespace tf::gui
