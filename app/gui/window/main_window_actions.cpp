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
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open =
      file->addAction(style()->standardIcon(QStyle::SP_DialogOpenButton), tr("&Open…"), this, &MainWindow::open_dialog);
  open->setShortcut(QKeySequence::Open);
  open->setObjectName("actionOpen");
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
  QAction* save_action =
      file->addAction(style()->standardIcon(QStyle::SP_DialogSaveButton), tr("&Save"), this, &MainWindow::save);
  save_action->setShortcut(QKeySequence::Save);
  QAction* save_as_action = file->addAction(tr("Save &As…"), this, &MainWindow::save_as);
  save_as_action->setShortcut(QKeySequence::SaveAs);
  file->addSeparator();
  QAction* batch = file->addAction(icon("batch"), tr("&Batch…"), this, [this] { show_batch_dialog(); });
  batch->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
  batch->setToolTip(tr("Filter a folder of images with the current chain"));
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

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
  QAction* apply_action = edit->addAction(icon("apply"), tr("&Apply Filters"), this, &MainWindow::apply);
  apply_action->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)});
  apply_action->setToolTip(tr("Filter the whole image with the chain (Ctrl+Return)"));

  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* zoom_in = view->addAction(tr("Zoom &In"), view_, &ImageView::zoom_in);
  zoom_in->setShortcuts({QKeySequence::ZoomIn, QKeySequence(Qt::CTRL | Qt::Key_Equal)});
  QAction* zoom_out = view->addAction(tr("Zoom &Out"), view_, &ImageView::zoom_out);
  zoom_out->setShortcut(QKeySequence::ZoomOut);
  QAction* fit = view->addAction(icon("zoom-fit"), tr("&Fit in Window"), view_, &ImageView::zoom_fit);
  fit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  QAction* actual = view->addAction(icon("zoom-100"), tr("&Actual Pixels (100%)"), view_, &ImageView::zoom_actual);
  actual->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
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
  QAction* compare_toggle = new QAction(icon("compare"), tr("Compare"), this);
  compare_toggle->setToolTip(tr("Before/after split on or off (F5 split, F6 after, F7 before)"));
  compare_toggle->setCheckable(true);
  compare_toggle->setChecked(true);
  connect(compare_toggle, &QAction::toggled, this, [this](bool on) {
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
  filters->addAction(apply_action);

  QMenu* tools = menuBar()->addMenu(tr("&Tools"));
  tools->addAction(batch);
  QAction* speedup = tools->addAction(icon("speedup"), tr("&Speedup Demo…"), this, [this] { show_speedup_dialog(); });
  speedup->setToolTip(tr("Measure the same job on 1..N devices and see what bounds it"));

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

  QToolBar* bar = addToolBar(tr("Main"));
  bar->setObjectName("mainToolBar");
  bar->setMovable(false);
  bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  bar->setIconSize(QSize(18, 18));
  bar->addAction(open);
  bar->addAction(save_action);
  bar->addSeparator();
  bar->addAction(undo_action_);
  bar->addAction(redo_action_);
  bar->addSeparator();
  bar->addAction(fit);
  bar->addAction(actual);
  bar->addAction(compare_toggle);
  bar->addSeparator();
  bar->addAction(apply_action);
  bar->addSeparator();
  bar->addAction(batch);
  bar->addAction(speedup);
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
  save_to(path, save_quality_);
}

void MainWindow::save_as() {
  if (document_.empty()) return;
  QString dir = options_.use_settings ? QSettings().value("paths/save").toString() : QString();
  if (dir.isEmpty()) dir = document_.path().isEmpty() ? QDir::homePath() : QFileInfo(document_.path()).absolutePath();
  const QFileInfo current(document_.display_name());
  QString suggested = dir + QLatin1Char('/') + current.completeBaseName() + QStringLiteral("-filtered.") +
                      (current.suffix().isEmpty() ? QStringLiteral("png") : current.suffix());
  SaveOptionsDialog dialog(suggested, document_.image().format(), save_quality_, this);
  if (dialog.exec() != QDialog::Accepted) return;
  save_to(dialog.path(), dialog.quality());
}

bool MainWindow::confirm_discard() {
  if (!document_.modified()) return true;
  const auto answer = QMessageBox::question(
      this, tr("Unsaved changes"),
      tr("%1 has applied filters that are not saved. Save them first?").arg(document_.display_name()),
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (answer == QMessageBox::Cancel) return false;
  if (answer == QMessageBox::Discard) return true;
  if (document_.large()) {  // streamed off the GUI thread: close again once it is saved
    save_as();
    return false;
  }
  QString path = document_.path();
  if (path.isEmpty() || !can_encode(path.toStdString(), document_.image().format())) {
    path =
        QFileDialog::getSaveFileName(this, tr("Save As"), QDir::homePath() + "/" + document_.display_name() + ".png");
    if (path.isEmpty()) return false;
  }
  QApplication::setOverrideCursor(Qt::WaitCursor);
  try {
    encode_file(path.toStdString(), document_.image().view(), document_.write_options(save_quality_),
                document_.metadata());
    QApplication::restoreOverrideCursor();
    document_.mark_saved(path);
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
    connect(batch_, &BatchDialog::job_finished, this, [this](const JobView& job) {
      devices_->show_job(job);
      timeline_->set_job(job);
    });
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
    connect(speedup_, &SpeedupDialog::job_finished, this, [this](const JobView& job) {
      devices_->show_job(job);
      timeline_->set_job(job);
    });
  }
  if (!panel_->settings().filters.empty()) speedup_->set_chain(panel_->settings());
  speedup_->show();
  speedup_->raise();
  speedup_->activateWindow();
  return speedup_;
}

}  // namespace tf::gui
