// The main window's menus and toolbar, and the file, preset and dialog actions behind them.
#include <QActionGroup>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyle>
#include <QToolBar>
#include <QUndoStack>
#include <algorithm>

#include "dialogs/batch_dialog.hpp"
#include "dialogs/save_options_dialog.hpp"
#include "dialogs/speedup_dialog.hpp"
#include "main_window.hpp"
#include "model/preset_files.hpp"
#include "panels/device_panel.hpp"
#include "panels/filter_panel.hpp"
#include "panels/message_bar.hpp"
#include "platform/app_identity.hpp"
#include "platform/recent_files.hpp"
#include "platform/theme.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/error.hpp"
#include "views/image_view.hpp"
#include "views/timeline_view.hpp"

#ifndef TF_VERSION
#define TF_VERSION "0.0.0"
#endif

namespace tf::gui {

namespace {

QIcon icon(const char* name) { return QIcon(QStringLiteral(":/icons/%1.svg").arg(QLatin1String(name))); }

QString open_filter() {
  QStringList patterns;
  for (const auto& ext : readable_extensions()) patterns << QStringLiteral("*%1").arg(QString::fromStdString(ext));
  return QObject::tr("Images (%1);;All files (*)").arg(patterns.join(' '));
}

}  // namespace

void MainWindow::build_actions() {
  build_file_menu();
  build_edit_menu();
  build_view_menu();
  build_filters_menu();
  QMenu* tools = menuBar()->addMenu(tr("&Tools"));
  tools->addAction(actions_.batch);
  actions_.speedup = tools->addAction(icon("speedup"), tr("&Speedup Demo…"), this, [this] { show_speedup_dialog(); });
  actions_.speedup->setToolTip(tr("Measure the same job on 1..N devices and see what bounds it"));

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About TileFilter"), this, [this] {
    QMessageBox::about(
        this, tr("About TileFilter"),
        tr("<h3>TileFilter %1</h3><p>Convolution filters on every GPU of the machine at once (or the CPU), "
           "tiled with halos, with the same output bits on every device.</p>"
           "<p>Drop an image on the window, add filters on the left, watch the devices on the right.</p>")
            .arg(QStringLiteral(TF_VERSION)));
  });
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
  build_toolbar();
}

void MainWindow::build_file_menu() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  actions_.open =
      file->addAction(style()->standardIcon(QStyle::SP_DialogOpenButton), tr("&Open…"), this, &MainWindow::open_dialog);
  actions_.open->setShortcut(QKeySequence::Open);
  actions_.open->setObjectName("actionOpen");
  QMenu* recent_menu = file->addMenu(tr("Open &Recent"));
  if (options_.use_settings) {
    recent_ = new RecentFiles(recent_menu, this);
    connect(recent_, &RecentFiles::open_requested, this, &MainWindow::open_file);
  } else {
    recent_menu->setEnabled(false);
  }
  QMenu* samples = file->addMenu(tr("Open &Sample"));
  populate_samples(samples);
  file->addSeparator();
  actions_.save =
      file->addAction(style()->standardIcon(QStyle::SP_DialogSaveButton), tr("&Save"), this, &MainWindow::save);
  actions_.save->setShortcut(QKeySequence::Save);
  actions_.save->setObjectName("actionSave");
  actions_.save_as = file->addAction(tr("Save &As…"), this, &MainWindow::save_as);
  actions_.save_as->setShortcut(QKeySequence::SaveAs);
  actions_.save_as->setObjectName("actionSaveAs");
  file->addSeparator();
  actions_.batch = file->addAction(icon("batch"), tr("&Batch…"), this, [this] { show_batch_dialog(); });
  actions_.batch->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
  actions_.batch->setToolTip(tr("Filter a folder of images with the current chain"));
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
}

void MainWindow::build_edit_menu() {
  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  undo_action_ = document_.undo_stack()->createUndoAction(this, tr("&Undo"));
  undo_action_->setShortcut(QKeySequence::Undo);
  undo_action_->setIcon(icon("undo"));
  redo_action_ = document_.undo_stack()->createRedoAction(this, tr("&Redo"));
  redo_action_->setShortcuts({QKeySequence::Redo, QKeySequence(Qt::CTRL | Qt::Key_Y)});
  redo_action_->setIcon(icon("redo"));
  edit->addAction(undo_action_);
  edit->addAction(redo_action_);
  edit->addSeparator();
  actions_.apply = edit->addAction(icon("apply"), tr("&Apply Filters"), this, &MainWindow::apply);
  actions_.apply->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)});
  actions_.apply->setToolTip(tr("Filter the whole image with the chain (Ctrl+Return)"));
  actions_.apply->setObjectName("actionApply");
}

void MainWindow::build_view_menu() {
  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* zoom_in = view->addAction(tr("Zoom &In"), view_, &ImageView::zoom_in);
  zoom_in->setShortcuts({QKeySequence::ZoomIn, QKeySequence(Qt::CTRL | Qt::Key_Equal)});
  QAction* zoom_out = view->addAction(tr("Zoom &Out"), view_, &ImageView::zoom_out);
  zoom_out->setShortcut(QKeySequence::ZoomOut);
  actions_.fit = view->addAction(icon("zoom-fit"), tr("&Fit in Window"), view_, &ImageView::zoom_fit);
  actions_.fit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  actions_.actual = view->addAction(icon("zoom-100"), tr("&Actual Pixels (100%)"), view_, &ImageView::zoom_actual);
  actions_.actual->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
  actions_.zoom = {zoom_in, zoom_out, actions_.fit, actions_.actual};
  view->addSeparator();
  compare_group_ = new QActionGroup(this);
  const std::pair<QString, ImageView::Compare> modes[] = {{tr("Before/After &Split"), ImageView::Compare::Split},
                                                          {tr("A&fter Only"), ImageView::Compare::After},
                                                          {tr("&Before Only"), ImageView::Compare::Before}};
  int key = Qt::Key_F5;
  for (const auto& [label, mode] : modes) {
    QAction* a = view->addAction(label);
    a->setCheckable(true);
    a->setChecked(mode == ImageView::Compare::Split);
    a->setShortcut(QKeySequence(key++));
    a->setActionGroup(compare_group_);
    connect(a, &QAction::triggered, this, [this, mode = mode] { view_->set_compare(mode); });
  }
  actions_.compare = new QAction(icon("compare"), tr("Compare"), this);
  actions_.compare->setToolTip(tr("Before/after split on or off (F5 split, F6 after, F7 before)"));
  actions_.compare->setCheckable(true);
  actions_.compare->setChecked(true);
  connect(actions_.compare, &QAction::toggled, this, [this](bool on) {
    const ImageView::Compare mode = on ? ImageView::Compare::Split : ImageView::Compare::After;
    view_->set_compare(mode);
    compare_group_->actions()[on ? 0 : 1]->setChecked(true);
  });
  view->addSeparator();
  for (QDockWidget* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());
  view->addSeparator();
  QAction* dark = view->addAction(tr("&Dark Theme"));
  dark->setCheckable(true);
  dark->setChecked(QSettings().value("view/dark", true).toBool());
  connect(dark, &QAction::toggled, this, [this](bool on) {
    apply_theme(*qApp, on);
    if (options_.use_settings) QSettings().setValue("view/dark", on);
  });
}

void MainWindow::build_filters_menu() {
  QMenu* filters = menuBar()->addMenu(tr("F&ilters"));
  QMenu* presets = filters->addMenu(tr("&Presets"));
  for (const QString& p : bundled_presets()) {
    QString name = QFileInfo(p).completeBaseName();
    try {
      name = QString::fromStdString(read_preset(p).name);
    } catch (...) {
    }
    presets->addAction(name, this, [this, p] { load_preset(p); });
    panel_->presets_menu()->addAction(name, this, [this, p] { load_preset(p); });
  }
  filters->addAction(tr("&Load Preset…"), this, &MainWindow::load_preset_dialog);
  filters->addAction(tr("&Save Preset…"), this, &MainWindow::save_preset_dialog);
  panel_->presets_menu()->addSeparator();
  panel_->presets_menu()->addAction(tr("Load Preset…"), this, &MainWindow::load_preset_dialog);
  panel_->presets_menu()->addAction(tr("Save Preset…"), this, &MainWindow::save_preset_dialog);
  filters->addSeparator();
  filters->addAction(actions_.apply);
}

void MainWindow::build_toolbar() {
  QToolBar* bar = addToolBar(tr("Main"));
  bar->setObjectName("mainToolBar");
  bar->setMovable(false);
  bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  bar->setIconSize(QSize(18, 18));
  bar->addAction(actions_.open);
  bar->addAction(actions_.save);
  bar->addSeparator();
  bar->addAction(undo_action_);
  bar->addAction(redo_action_);
  bar->addSeparator();
  bar->addAction(actions_.fit);
  bar->addAction(actions_.actual);
  bar->addAction(actions_.compare);
  bar->addSeparator();
  bar->addAction(actions_.apply);
  bar->addSeparator();
  bar->addAction(actions_.batch);
  bar->addAction(actions_.speedup);
}

void MainWindow::update_actions() {
  // What needs an image is greyed out without one (as GIMP does), instead of doing nothing.
  const bool image = !document_.empty();
  for (QAction* a : {actions_.save, actions_.save_as, actions_.apply, actions_.compare}) a->setEnabled(image);
  for (QAction* a : actions_.zoom) a->setEnabled(image);
  panel_->set_has_image(image);
}

void MainWindow::populate_samples(QMenu* menu) {
  const QString dir = data_dir("samples");
  const QStringList files = dir.isEmpty()
                                ? QStringList()
                                : QDir(dir).entryList({"*.png", "*.jpg", "*.jpeg", "*.tif"}, QDir::Files, QDir::Name);
  for (const QString& f : files) {
    const QString path = dir + QLatin1Char('/') + f;
    menu->addAction(f, this, [this, path] { open_file(path); });
  }
  if (files.isEmpty()) menu->addAction(tr("(no samples installed)"))->setEnabled(false);
}

void MainWindow::open_dialog() {
  QString start = options_.use_settings ? QSettings().value("paths/open").toString() : QString();
  if (start.isEmpty()) start = data_dir("samples");
  if (start.isEmpty()) start = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
  const QString path = QFileDialog::getOpenFileName(this, tr("Open Image"), start, open_filter());
  if (!path.isEmpty()) open_file(path);
}

void MainWindow::save() {
  if (document_.empty()) return;
  const QString path = document_.path();
  std::string why;
  // A large document's file (or one Undo goes back to) stays on disk while it is open: save elsewhere.
  if (path.isEmpty() || !can_encode(path.toStdString(), document_.image().format(), &why) ||
      (document_.large() && file_in_use(path))) {
    save_as();
    return;
  }
  save_to(path, save_jpeg_);
}

void MainWindow::save_as() {
  if (document_.empty()) return;
  const QFileInfo current(document_.display_name());
  QString suggested = save_folder() + QLatin1Char('/') + current.completeBaseName() + QStringLiteral("-filtered.") +
                      (current.suffix().isEmpty() ? QStringLiteral("png") : current.suffix());
  SaveOptionsDialog dialog(suggested, document_.image().format(), save_jpeg_, this);
  if (dialog.exec() != QDialog::Accepted) return;
  save_to(dialog.path(), dialog.jpeg());
}

void MainWindow::remember_save_folder(const QString& path) {
  last_save_folder_ = QFileInfo(path).absolutePath();
  if (options_.use_settings) QSettings().setValue("paths/save", last_save_folder_);
}

QString MainWindow::save_folder() const {
  QString dir = last_save_folder_;
  if (dir.isEmpty() && options_.use_settings) dir = QSettings().value("paths/save").toString();
  if (dir.isEmpty() && !document_.path().isEmpty()) dir = QFileInfo(document_.path()).absolutePath();
  // Not into the bundled samples (read-only once installed): the pictures folder instead.
  const QString samples = data_dir("samples");
  if (dir.isEmpty() || (!samples.isEmpty() && QDir(dir) == QDir(samples))) {
    dir = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
    if (dir.isEmpty() || !QDir(dir).exists()) dir = QDir::homePath();
  }
  return dir;
}

QString MainWindow::unsaved_text(bool closing) const {
  QStringList lost;
  if (document_.modified()) {
    const QUndoStack* undo = document_.undo_stack();
    const int steps = undo->index() - undo->cleanIndex();
    if (undo->cleanIndex() < 0 || steps > 0)
      lost << (steps <= 1
                   ? tr("1 applied filter step of %1 not saved to a file").arg(document_.display_name())
                   : tr("%1 applied filter steps of %2 not saved to a file").arg(steps).arg(document_.display_name()));
    else
      lost << (steps == -1
                   ? tr("%1 as shown: it was saved with 1 step you have since undone").arg(document_.display_name())
                   : tr("%1 as shown: it was saved with %2 steps you have since undone")
                         .arg(document_.display_name())
                         .arg(-steps));
  }
  // The panel's chain goes with the window, not with another file (the panel keeps it for that one).
  const ChainSettings chain = panel_->settings();
  if (closing && !document_.empty() && !chain.filters.empty()) {
    QStringList specs;
    try {
      for (const auto& s : to_specs(chain.filters)) specs << QString::fromStdString(s);
    } catch (const std::exception&) {
      specs << tr("%1 filters").arg(chain.filters.size());
    }
    lost << tr("the filter chain %1, never applied (Filters ▸ Save Preset keeps it)")
                .arg(specs.join(QStringLiteral(" → ")));
  }
  return lost.isEmpty() ? QString() : tr("Closing now loses: %1.").arg(lost.join(tr("; and ")));
}

bool MainWindow::confirm_discard(bool closing) {
  const QString lost = unsaved_text(closing);
  if (lost.isEmpty()) return true;
  if (!document_.modified()) {  // only the chain: nothing to save to an image file
    const auto answer = QMessageBox::question(this, tr("Unapplied filters"), lost,
                                              QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Cancel);
    return answer == QMessageBox::Discard;
  }
  const auto answer =
      QMessageBox::question(this, tr("Unsaved changes"), lost + tr("\nSave the image first?"),
                            QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (answer == QMessageBox::Cancel) return false;
  if (answer == QMessageBox::Discard) return true;
  if (document_.large()) {  // streamed off the GUI thread: close again once it is saved
    save_as();
    return false;
  }
  QString path = document_.path();
  if (path.isEmpty() || !can_encode(path.toStdString(), document_.image().format())) {
    path = QFileDialog::getSaveFileName(this, tr("Save As"), save_folder() + "/" + document_.display_name() + ".png");
    if (path.isEmpty()) return false;
  }
  QApplication::setOverrideCursor(Qt::WaitCursor);
  try {
    encode_file(path.toStdString(), document_.image().view(), document_.write_options(save_jpeg_),
                document_.metadata());
    QApplication::restoreOverrideCursor();
    document_.mark_saved(path);
    remember_save_folder(path);
    return true;
  } catch (const std::exception& e) {
    QApplication::restoreOverrideCursor();
    show_error(QString::fromUtf8(e.what()));
    return false;
  }
}

void MainWindow::load_preset(const QString& path) {
  try {
    const Preset p = read_preset(path);
    panel_->set_settings(p.chain);
    statusBar()->showMessage(
        tr("Preset “%1” loaded%2")
            .arg(QString::fromStdString(p.name),
                 p.description.empty() ? QString() : QStringLiteral(": ") + QString::fromStdString(p.description)),
        6000);
  } catch (const std::exception& e) {
    show_error(QString::fromUtf8(e.what()));
  }
}

void MainWindow::load_preset_dialog() {
  QString dir = options_.use_settings ? QSettings().value("paths/presets").toString() : QString();
  if (dir.isEmpty()) dir = data_dir("presets");
  const QString path = QFileDialog::getOpenFileName(this, tr("Load Preset"), dir, tr("Filter presets (*.json)"));
  if (path.isEmpty()) return;
  if (options_.use_settings) QSettings().setValue("paths/presets", QFileInfo(path).absolutePath());
  load_preset(path);
}

void MainWindow::save_preset_dialog() {
  const ChainSettings chain = panel_->settings();
  if (chain.filters.empty()) {
    show_info(tr("The chain is empty: add filters before saving a preset."));
    return;
  }
  QString dir = options_.use_settings ? QSettings().value("paths/presets").toString() : QString();
  if (dir.isEmpty()) dir = QDir::homePath();
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save Preset"), dir + "/my-preset.json", tr("Filter presets (*.json)"));
  if (path.isEmpty()) return;
  try {
    Preset p;
    p.name = QFileInfo(path).completeBaseName().toStdString();
    p.chain = chain;
    write_preset(path, p);
    if (options_.use_settings) QSettings().setValue("paths/presets", QFileInfo(path).absolutePath());
    statusBar()->showMessage(tr("Preset saved to %1").arg(path), 5000);
  } catch (const std::exception& e) {
    show_error(QString::fromUtf8(e.what()));
  }
}

BatchDialog* MainWindow::show_batch_dialog() {
  if (!batch_) {
    batch_ = new BatchDialog(options_.use_settings, this);
    connect(batch_, &BatchDialog::job_finished, this, [this](const JobView& job) { show_job(job); });
  }
  batch_->set_chain(panel_->settings());
  batch_->set_devices(panel_->devices());
  if (!document_.path().isEmpty()) batch_->suggest_input(QFileInfo(document_.path()).absolutePath());
  batch_->show();
  batch_->raise();
  batch_->activateWindow();
  return batch_;
}

SpeedupDialog* MainWindow::show_speedup_dialog() {
  if (!speedup_) {
    speedup_ = new SpeedupDialog(this);
    connect(speedup_, &SpeedupDialog::job_finished, this, [this](const JobView& job) { show_job(job); });
  }
  if (!panel_->settings().filters.empty()) speedup_->set_chain(panel_->settings());
  speedup_->show();
  speedup_->raise();
  speedup_->activateWindow();
  return speedup_;
}

}  // namespace tf::gui
