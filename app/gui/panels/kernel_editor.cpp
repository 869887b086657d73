#include "kernel_editor.hpp"

#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <cmath>

#include "tilefilter/filters/filter.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::gui {

namespace {

constexpr int kMaxGridSide = 15;  // larger kernels come from files; a 255x255 grid is not editable by hand

KernelGrid grid_of(int w, int h, std::vector<double> taps) { return KernelGrid{w, h, std::move(taps)}; }

struct Starter {
  const char* name;
  KernelGrid grid;
};

std::vector<Starter> starters() {
  return {
      {"Identity", KernelGrid::identity(3, 3)},
      {"Box 3×3", grid_of(3, 3, std::vector<double>(9, 1))},
      {"Box 5×5", grid_of(5, 5, std::vector<double>(25, 1))},
      {"Sharpen", grid_of(3, 3, {0, -1, 0, -1, 5, -1, 0, -1, 0})},
      {"Edges (Laplacian 8)", grid_of(3, 3, {-1, -1, -1, -1, 8, -1, -1, -1, -1})},
      {"Emboss", grid_of(3, 3, {-2, -1, 0, -1, 1, 1, 0, 1, 2})},
      {"Motion blur 7 (diagonal)",
       [] {
         KernelGrid g = grid_of(7, 7, std::vector<double>(49, 0));
         for (int i = 0; i < 7; ++i) g.taps[static_cast<std::size_t>(i) * 7 + i] = 1;
         return g;
       }()},
  };
}

QString tap_text(double v) { return QString::number(v, 'g', 6); }

}  // namespace

KernelEditor::KernelEditor(QWidget* parent) : QWidget(parent) {
  setObjectName("kernelEditor");
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* size_row = new QHBoxLayout;
  width_ = new QSpinBox(this);
  height_ = new QSpinBox(this);
  width_->setObjectName("kernelWidth");
  height_->setObjectName("kernelHeight");
  for (auto* s : {width_, height_}) {
    s->setRange(1, kMaxGridSide);
    s->setKeyboardTracking(false);
  }
  size_row->addWidget(new QLabel(tr("Size"), this));
  size_row->addWidget(width_);
  size_row->addWidget(new QLabel(QStringLiteral("×"), this));
  size_row->addWidget(height_);
  size_row->addStretch(1);
  auto* starts = new QToolButton(this);
  starts->setText(tr("Start from"));
  starts->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(starts);
  for (const auto& s : starters()) {
    const KernelGrid g = s.grid;
    menu->addAction(tr(s.name), this, [this, g] { commit(g); });
  }
  starts->setMenu(menu);
  size_row->addWidget(starts);
  layout->addLayout(size_row);

  table_ = new QTableWidget(this);
  table_->setObjectName("kernelGrid");
  table_->horizontalHeader()->setVisible(false);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setMinimumSectionSize(20);
  table_->setMinimumHeight(120);
  layout->addWidget(table_, 1);

  auto* bottom = new QHBoxLayout;
  sum_ = new QLabel(this);
  sum_->setObjectName("kernelSum");
  bottom->addWidget(sum_, 1);
  auto* load = new QToolButton(this);
  load->setText(tr("Load…"));
  auto* save = new QToolButton(this);
  save->setText(tr("Save…"));
  bottom->addWidget(load);
  bottom->addWidget(save);
  layout->addLayout(bottom);

  connect(width_, &QSpinBox::valueChanged, this, [this](int w) {
    if (updating_) return;
    KernelGrid g = grid_;
    g.resize(w, g.height);
    commit(g);
  });
  connect(height_, &QSpinBox::valueChanged, this, [this](int h) {
    if (updating_) return;
    KernelGrid g = grid_;
    g.resize(g.width, h);
    commit(g);
  });
  connect(table_, &QTableWidget::cellChanged, this, [this](int row, int column) {
    if (updating_) return;
    bool ok = false;
    const double v = table_->item(row, column)->text().toDouble(&ok);
    const std::size_t i = static_cast<std::size_t>(row) * grid_.width + column;
    if (!ok || !std::isfinite(v)) {  // put the old value back
      const QSignalBlocker block(table_);
      table_->item(row, column)->setText(tap_text(grid_.taps[i]));
      return;
    }
    grid_.taps[i] = v;
    update_sum();
    emit edited();
  });
  connect(load, &QToolButton::clicked, this, &KernelEditor::load_file);
  connect(save, &QToolButton::clicked, this, &KernelEditor::save_file);
  set_kernel(grid_);
}

void KernelEditor::set_kernel(const KernelGrid& grid) {
  grid_ = grid;
  updating_ = true;
  width_->setValue(grid.width);
  height_->setValue(grid.height);
  updating_ = false;
  rebuild_table();
}

void KernelEditor::commit(const KernelGrid& grid) {
  set_kernel(grid);
  emit edited();
}

void KernelEditor::rebuild_table() {
  updating_ = true;
  table_->clear();
  table_->setRowCount(grid_.height);
  table_->setColumnCount(grid_.width);
  const bool editable = grid_.width <= kMaxGridSide && grid_.height <= kMaxGridSide;
  for (int y = 0; y < grid_.height; ++y)
    for (int x = 0; x < grid_.width; ++x) {
      auto* item = new QTableWidgetItem(tap_text(grid_.at(x, y)));
      item->setTextAlignment(Qt::AlignCenter);
      if (x == grid_.width / 2 && y == grid_.height / 2) item->setBackground(QColor(80, 110, 160, 90));  // the anchor
      if (!editable) item->setFlags(item->flags() & ~Qt::ItemIsEditable);
      table_->setItem(y, x, item);
    }
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  width_->setEnabled(editable);
  height_->setEnabled(editable);
  updating_ = false;
  update_sum();
}

void KernelEditor::update_sum() {
  sum_->setText(tr("%1×%2, sum %3").arg(grid_.width).arg(grid_.height).arg(grid_.sum(), 0, 'g', 6));
}

void KernelEditor::load_file() {
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Load kernel"), {}, tr("Kernel files (*.txt *.csv);;All files (*)"));
  if (path.isEmpty()) return;
  try {
    commit(KernelGrid::from_kernel(load_kernel_file(path.toStdString())));
  } catch (const Error& e) {
    emit error(QString::fromUtf8(e.what()));
  }
}

void KernelEditor::save_file() {
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save kernel"), QStringLiteral("kernel.txt"), tr("Kernel files (*.txt)"));
  if (path.isEmpty()) return;
  QFile f(path);
  const QByteArray text = QByteArray::fromStdString(grid_.to_text());
  if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size())
    emit error(tr("%1: cannot write (%2)").arg(path, f.errorString()));
}

}  // namespace tf::gui
