#include "main_window.hpp"

#include <QCloseEvent>
#include <QDockWidget>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLabel>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cstring>

#include "dialogs/batch_dialog.hpp"
#include "dialogs/speedup_dialog.hpp"
#include "model/apply_command.hpp"
#include "model/job_view.hpp"
#include "panels/device_panel.hpp"
#include "panels/filter_panel.hpp"
#include "panels/message_bar.hpp"
#include "platform/app_identity.hpp"
#include "platform/device_hub.hpp"
#include "platform/recent_files.hpp"
#include "platform/release_later.hpp"
#include "platform/utilization_sampler.hpp"
#include "tilefilter/engine/startup.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/error.hpp"
#include "views/image_view.hpp"
#include "views/timeline_view.hpp"

namespace tf::gui {

MainWindow::MainWindow(MainWindowOptions options, QWidget* parent) : QMainWindow(parent), options_(options) {
  init_resources();
  setObjectName("mainWindow");
  setWindowIcon(QIcon(QStringLiteral(":/icons/tilefilter.svg")));
  setAcceptDrops(true);
  setDockNestingEnabled(true);

  engine_ = new PreviewEngine(this);
  view_ = new ImageView;
  messages_ = new MessageBar;
  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(4, 4, 4, 0);
  layout->setSpacing(4);
  layout->addWidget(messages_);
  layout->addWidget(view_, 1);
  setCentralWidget(central);

  build_docks();
  build_actions();
  build_status_bar();
  connect_preview();
  connect_jobs();

  sampler_ = new UtilizationSampler(250, this);
  connect(sampler_, &UtilizationSampler::sampled, devices_, &DevicePanel::add_samples);

  resize(1480, 920);
  if (options_.use_settings) restore_settings();
  update_title();
  update_actions();
}

void MainWindow::connect_preview() {
  view_timer_ = new QTimer(this);
  view_timer_->setSingleShot(true);
  view_timer_->setInterval(120);
  connect(view_timer_, &QTimer::timeout, this, [this] {
    // Zoomed or panned before the first pass arrived: plan it for what is in view now. Once it has
    // arrived the full pass is under way and covers every view; restarting it would only delay it.
    if (preview_pending_ && first_latency_ms_ < 0) request_preview();
  });

  connect(engine_, &PreviewEngine::result_ready, this, &MainWindow::on_result);
  connect(engine_, &PreviewEngine::progress, this, [this](quint64 generation, int done, int total) {
    if (generation != requested_) return;
    progress_->setMaximum(std::max(1, total));
    progress_->setValue(done);
  });
  connect(engine_, &PreviewEngine::failed, this, [this](quint64 generation, const QString& message) {
    if (generation != requested_) return;
    preview_pending_ = false;
    if (apply_pending_) {
      apply_pending_ = false;
      panel_->set_applying(false);
    }
    progress_->hide();
    show_error(message);
    check_idle();
  });
  connect(engine_, &PreviewEngine::finished, this, [this] { check_idle(); });

  connect(panel_, &FilterPanel::chain_changed, this, [this] {
    if (panel_->live_preview()) request_preview();
    else if (view_->has_result()) timing_label_->setText(tr("Preview out of date — press Preview"));
  });
  connect(panel_, &FilterPanel::devices_changed, this, [this] {
    if (panel_->live_preview()) request_preview();
  });
  connect(panel_, &FilterPanel::preview_requested, this, &MainWindow::request_preview);
  setup_large_view();
  connect(panel_, &FilterPanel::apply_requested, this, &MainWindow::apply);
  connect(panel_, &FilterPanel::error, this, &MainWindow::show_error);
  connect(view_, &ImageView::view_changed, this, [this] {
    if (preview_pending_) view_timer_->start();
  });
  connect(view_, &ImageView::zoom_changed, this, [this](double zoom) {
    zoom_label_->setText(QStringLiteral("%1%").arg(zoom * devicePixelRatioF() * 100, 0, 'f', zoom < 0.1 ? 1 : 0));
  });
  connect(view_, &ImageView::hover_pixel, this, &MainWindow::show_pixel);
  connect(&document_, &ImageDocument::image_changed, this, &MainWindow::on_document_changed);
  connect(&document_, &ImageDocument::title_changed, this, &MainWindow::update_title);
  // Undo and Redo are successes too: an error about an earlier step is then out of date.
  connect(document_.undo_stack(), &QUndoStack::indexChanged, this, &MainWindow::clear_error);
}

void MainWindow::connect_jobs() {
  connect(&load_watcher_, &QFutureWatcher<Loaded>::finished, this, &MainWindow::on_loaded);
  connect(&save_watcher_, &QFutureWatcher<QString>::finished, this, &MainWindow::on_saved);
  connect(&apply_watcher_, &QFutureWatcher<Applied>::finished, this, &MainWindow::on_applied);
}

void MainWindow::on_loaded() {
  Loaded loaded = load_watcher_.result();
  progress_->hide();
  if (!loaded.error.isEmpty()) {
    show_error(loaded.error);
    statusBar()->clearMessage();
    emit load_failed(loaded.error);
    check_idle();
    return;
  }
  messages_->hide();
  document_.reset(loaded.path, loaded.name, std::move(loaded.state));
  view_->zoom_fit();
  if (!loaded.path.isEmpty()) {
    if (recent_) recent_->add(loaded.path);
    if (options_.use_settings) QSettings().setValue("paths/open", QFileInfo(loaded.path).absolutePath());
  }
  statusBar()->showMessage(tr("Opened %1").arg(document_.display_name()), 4000);
  update_actions();
  request_preview();
  emit image_loaded(document_.display_name());
  check_idle();
}

void MainWindow::on_saved() {
  const QString error = save_watcher_.result();
  progress_->hide();
  cancel_save_->hide();
  if (error.isEmpty() && stream_report_) {
    finish_save_large();
  } else if (!error.isEmpty()) {
    show_error(error);
  } else {
    clear_error();
    document_.mark_saved(saving_path_);
    if (recent_) recent_->add(saving_path_);
    remember_save_folder(saving_path_);
    if (!panel_->settings().filters.empty())
      show_info(tr("Saved %1. The filter chain was not applied: the file holds the image without it — "
                   "Apply (Ctrl+Return) first to save the result.")
                    .arg(QFileInfo(saving_path_).fileName()));
    else statusBar()->showMessage(tr("Saved %1").arg(saving_path_), 5000);
    emit saved(saving_path_);
  }
  check_idle();
}

void MainWindow::on_applied() {
  Applied result = apply_watcher_.result();
  panel_->set_applying(false);
  if (save_cancel_ && !save_watcher_.isRunning()) {  // a large document's Apply streamed the file
    save_cancel_.reset();
    progress_->hide();
    cancel_save_->hide();
  }
  if (!result.error.isEmpty()) {
    show_error(result.error);
    check_idle();
    return;
  }
  if (result.stream) {
    apply_text_ = result.text;
    show_stream_job(*result.stream, tr("Apply"));
  }
  const QString text = tr("Apply %1").arg(apply_text_);
  document_.undo_stack()->push(new ApplyCommand(
      &document_, document_.state(), std::exchange(*result.state, {}), apply_chain_,
      [this](const ChainSettings& c) { panel_->set_settings(c); }, text));
  clear_error();
  statusBar()->showMessage(tr("Applied — Ctrl+Z undoes it"), 5000);
  emit applied();
  check_idle();
}

MainWindow::~MainWindow() {
  engine_->cancel();
  load_watcher_.waitForFinished();
  save_watcher_.waitForFinished();
  detail_watcher_.waitForFinished();
  apply_watcher_.waitForFinished();
}

void MainWindow::build_docks() {
  panel_ = new FilterPanel;
  auto* panel_scroll = new QScrollArea;
  panel_scroll->setWidget(panel_);
  panel_scroll->setWidgetResizable(true);
  panel_scroll->setFrameShape(QFrame::NoFrame);
  panel_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* left = new QDockWidget(tr("Filters"), this);
  left->setObjectName("filtersDock");
  left->setWidget(panel_scroll);
  addDockWidget(Qt::LeftDockWidgetArea, left);

  devices_ = new DevicePanel;
  auto* right = new QDockWidget(tr("Devices"), this);
  right->setObjectName("devicesDock");
  right->setWidget(devices_);
  addDockWidget(Qt::RightDockWidgetArea, right);

  timeline_ = new TimelineView;
  auto* timeline_scroll = new QScrollArea;
  timeline_scroll->setWidget(timeline_);
  timeline_scroll->setWidgetResizable(true);
  timeline_scroll->setFrameShape(QFrame::NoFrame);
  auto* bottom = new QDockWidget(tr("Timeline of the last job"), this);
  bottom->setObjectName("timelineDock");
  bottom->setWidget(timeline_scroll);
  addDockWidget(Qt::BottomDockWidgetArea, bottom);
  // The timeline spans under the image only; the side docks keep the full height.
  setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
  resizeDocks({left, right}, {350, 330}, Qt::Horizontal);
  timeline_dock_ = bottom;
  connect(&DeviceHub::instance(), &DeviceHub::discovery_finished, this, &MainWindow::size_timeline,
          Qt::QueuedConnection);
  size_timeline();
}

void MainWindow::show_job(const JobView& job) {
  devices_->show_job(job);
  timeline_->set_job(job);
  // Every lane in view (up to a third of the window): a batch adds decode and encode lanes.
  const int needed = timeline_->minimumSizeHint().height() + 34;  // the dock's title and margins
  if (timeline_dock_->isVisible() && timeline_dock_->height() < needed)
    resizeDocks({timeline_dock_}, {std::min(needed, height() / 3)}, Qt::Vertical);
}

void MainWindow::size_timeline() {
  // Before discovery has finished, for the GPUs the driver shows (no CUDA call, no wait).
  auto& hub = DeviceHub::instance();
  const bool gpus = hub.gpus_ready() ? !hub.gpus().empty() : gpus_visible_without_cuda() > 0;
  if (timeline_for_gpus_ == gpus) return;
  timeline_for_gpus_ = gpus;
  resizeDocks({timeline_dock_}, {gpus ? 240 : 170}, Qt::Vertical);
}

void MainWindow::build_status_bar() {
  pixel_label_ = new QLabel(this);
  pixel_label_->setObjectName("pixelLabel");
  timing_label_ = new QLabel(this);
  timing_label_->setObjectName("timingLabel");
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(160);
  progress_->setMaximumHeight(14);
  progress_->setTextVisible(false);
  progress_->hide();
  zoom_label_ = new QLabel(this);
  zoom_label_->setObjectName("zoomLabel");
  zoom_label_->setMinimumWidth(50);
  zoom_label_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  statusBar()->addWidget(pixel_label_);
  statusBar()->addPermanentWidget(timing_label_);
  statusBar()->addPermanentWidget(progress_);
  cancel_save_ = new QPushButton(tr("Cancel"), this);
  cancel_save_->setObjectName("cancelSave");
  cancel_save_->hide();
  connect(cancel_save_, &QPushButton::clicked, this, [this] {
    if (save_cancel_) *save_cancel_ = true;
  });
  statusBar()->addPermanentWidget(cancel_save_);
  statusBar()->addPermanentWidget(zoom_label_);
}

void MainWindow::show_error(const QString& message) { messages_->show_message(MessageBar::Level::Error, message); }
void MainWindow::clear_error() {
  if (messages_->isVisible() && messages_->level() != MessageBar::Level::Info) messages_->hide();
}
void MainWindow::show_info(const QString& message) { messages_->show_message(MessageBar::Level::Info, message, 12000); }

void MainWindow::show_pixel(QPoint pos, bool inside) {
  if (!inside || document_.empty()) {
    pixel_label_->clear();
    return;
  }
  const Image& img = document_.image();
  const Format f = img.format();
  const std::byte* px = img.view().row(pos.y()) + static_cast<std::size_t>(pos.x()) * f.pixel_bytes();
  static const char* names[] = {"R", "G", "B", "A"};
  QStringList values;
  for (int c = 0; c < f.channels; ++c) {
    const std::byte* s = px + c * bytes_per_sample(f.type);
    QString v;
    if (f.type == PixelType::U8) v = QString::number(static_cast<unsigned>(*s));
    else if (f.type == PixelType::U16) {
      std::uint16_t x;
      std::memcpy(&x, s, 2);
      v = QString::number(x);
    } else {
      float x;
      std::memcpy(&x, s, 4);
      v = QString::number(x, 'f', 4);
    }
    values << (f.channels == 1 ? QStringLiteral("value %1").arg(v) : QStringLiteral("%1 %2").arg(names[c], v));
  }
  pixel_label_->setText(
      QStringLiteral("x %1  y %2   %3").arg(pos.x()).arg(pos.y()).arg(values.join(QStringLiteral("  "))));
}

QRect MainWindow::within_screen(QRect window, const QRect& available) {
  window.setSize(window.size().boundedTo(available.size()));
  window.moveLeft(std::clamp(window.left(), available.left(), available.right() - window.width() + 1));
  window.moveTop(std::clamp(window.top(), available.top(), available.bottom() - window.height() + 1));
  return window;
}

void MainWindow::restore_settings() {
  QSettings s;
  // The inner rectangle, not saveGeometry(): with the frame a window manager adds, that came back
  // lower on every start. A screen since unplugged or made smaller brings it back within the one there.
  const QRect saved = s.value("window/rect").toRect();
  if (saved.isValid()) {
    const QScreen* screen = QGuiApplication::screenAt(saved.center());
    if (!screen) screen = QGuiApplication::primaryScreen();
    setGeometry(screen ? within_screen(saved, screen->availableGeometry()) : saved);
    if (s.value("window/maximized").toBool()) setWindowState(windowState() | Qt::WindowMaximized);
  }
  if (s.contains("window/state")) restoreState(s.value("window/state").toByteArray());
  const QString devices = s.value("devices").toString();
  if (!devices.isEmpty()) panel_->set_devices(devices);
}

void MainWindow::save_settings() {
  if (!options_.use_settings) return;
  QSettings s;
  s.setValue("window/rect", isMaximized() ? normalGeometry() : geometry());
  s.setValue("window/maximized", isMaximized());
  s.setValue("window/state", saveState());
  s.setValue("devices", panel_->devices());
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (options_.confirm_close && !confirm_discard(true)) {
    e->ignore();
    return;
  }
  save_settings();
  engine_->cancel();
  if (batch_) batch_->close();
  if (speedup_) speedup_->close();
  e->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls())
    for (const QUrl& u : e->mimeData()->urls())
      if (u.isLocalFile()) {
        e->acceptProposedAction();
        return;
      }
}

void MainWindow::dropEvent(QDropEvent* e) {
  for (const QUrl& u : e->mimeData()->urls())
    if (u.isLocalFile()) {
      const QString path = u.toLocalFile();
      if (path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive)) load_preset(path);
      else open_file(path);
      e->acceptProposedAction();
      return;
    }
}

}  // namespace tf::gui
