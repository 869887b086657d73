#include "main_window.hpp"

#include <QCloseEvent>
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QMimeData>
#include <QProgressBar>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent>
#include <cstring>

#include "app_identity.hpp"
#include "apply_command.hpp"
#include "batch_dialog.hpp"
#include "device_hub.hpp"
#include "device_panel.hpp"
#include "filter_panel.hpp"
#include "image_convert.hpp"
#include "image_view.hpp"
#include "job_view.hpp"
#include "message_bar.hpp"
#include "recent_files.hpp"
#include "release_later.hpp"
#include "speedup_dialog.hpp"
#include "tilefilter/codec.hpp"
#include "tilefilter/error.hpp"
#include "timeline_view.hpp"
#include "utilization_sampler.hpp"

namespace tf::gui {

namespace {

QString pass_name(PreviewPass pass, int level) {
  switch (pass) {
    case PreviewPass::Region: return QObject::tr("visible region");
    case PreviewPass::Proxy: return QObject::tr("proxy 1/%1").arg(1 << level);
    case PreviewPass::Full: return QObject::tr("full");
  }
  return {};
}

QString devices_used(const JobReport& report) {
  QStringList used;
  for (std::size_t d = 0; d < report.tiles_per_device.size() && d < report.device_names.size(); ++d)
    if (report.tiles_per_device[d] > 0) used << QString::fromStdString(report.device_names[d]);
  return used.join(QStringLiteral(", "));
}

}  // namespace

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

  connect(&load_watcher_, &QFutureWatcher<Loaded>::finished, this, [this] {
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
    request_preview();
    emit image_loaded(document_.display_name());
    check_idle();
  });
  connect(&save_watcher_, &QFutureWatcher<QString>::finished, this, [this] {
    const QString error = save_watcher_.result();
    progress_->hide();
    if (!error.isEmpty()) {
      show_error(error);
    } else {
      document_.mark_saved(saving_path_);
      if (recent_) recent_->add(saving_path_);
      if (options_.use_settings) QSettings().setValue("paths/save", QFileInfo(saving_path_).absolutePath());
      if (!panel_->settings().filters.empty())
        show_info(tr("Saved %1. The filter chain was not applied: the file holds the image without it — "
                     "Apply (Ctrl+Return) first to save the result.")
                      .arg(QFileInfo(saving_path_).fileName()));
      else statusBar()->showMessage(tr("Saved %1").arg(saving_path_), 5000);
      emit saved(saving_path_);
    }
    check_idle();
  });
  connect(&apply_watcher_, &QFutureWatcher<Applied>::finished, this, [this] {
    Applied result = apply_watcher_.result();
    panel_->set_applying(false);
    if (!result.error.isEmpty()) {
      show_error(result.error);
      check_idle();
      return;
    }
    const QString text = tr("Apply %1").arg(apply_text_);
    document_.undo_stack()->push(new ApplyCommand(
        &document_, document_.state(), std::move(result.state), apply_chain_,
        [this](const ChainSettings& c) { panel_->set_settings(c); }, text));
    statusBar()->showMessage(tr("Applied — Ctrl+Z undoes it"), 5000);
    emit applied();
    check_idle();
  });

  sampler_ = new UtilizationSampler(250, this);
  connect(sampler_, &UtilizationSampler::sampled, devices_, &DevicePanel::add_samples);

  resize(1480, 920);
  if (options_.use_settings) restore_settings();
  update_title();
}

MainWindow::~MainWindow() {
  engine_->cancel();
  load_watcher_.waitForFinished();
  save_watcher_.waitForFinished();
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
  resizeDocks({bottom}, {DeviceHub::instance().gpus().empty() ? 170 : 240}, Qt::Vertical);  // a lane per GPU stream
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
  statusBar()->addPermanentWidget(zoom_label_);
}

void MainWindow::open_file(const QString& path) {
  if (options_.confirm_close && !confirm_discard()) return;
  if (load_watcher_.isRunning()) {
    show_info(tr("Still opening the previous file; try again in a moment."));
    return;
  }
  statusBar()->showMessage(tr("Opening %1…").arg(QFileInfo(path).fileName()));
  progress_->setRange(0, 0);
  progress_->show();
  load_watcher_.setFuture(QtConcurrent::run([path]() -> Loaded {
    Loaded out;
    out.path = path;
    out.name = QFileInfo(path).fileName();
    try {
      out.state = load_state(path);
    } catch (const std::bad_alloc&) {
      out.error = tr("%1: not enough memory to open this image").arg(path);
    } catch (const std::exception& e) {
      out.error = QString::fromUtf8(e.what());
    }
    return out;
  }));
}

void MainWindow::open_image(const Image& image, const QString& name) {
  progress_->setRange(0, 0);
  progress_->show();
  load_watcher_.setFuture(QtConcurrent::run([image, name]() -> Loaded {
    Loaded out;
    out.name = name;
    try {
      out.state = make_state(DeviceHub::in_host_memory(image));
    } catch (const std::exception& e) {
      out.error = QString::fromUtf8(e.what());
    }
    return out;
  }));
}

void MainWindow::set_chain(const ChainSettings& chain) { panel_->set_settings(chain); }

void MainWindow::set_devices(const QString& spec) {
  panel_->set_devices(spec);
  if (panel_->live_preview()) request_preview();
}

void MainWindow::on_document_changed() {
  const DocumentState& st = document_.state();
  engine_->set_source({st.image, st.pyramid});
  view_->set_before(st.display);
  if (full_) release_later(std::exchange(full_, std::nullopt));
  preview_pending_ = false;
  requested_ = 0;
  update_title();
}

void MainWindow::update_title() {
  if (document_.empty()) {
    setWindowTitle(QStringLiteral("TileFilter"));
    return;
  }
  const Image& img = document_.image();
  setWindowTitle(QStringLiteral("%1[*] — %2×%3 %4 — TileFilter")
                     .arg(document_.display_name())
                     .arg(img.width())
                     .arg(img.height())
                     .arg(describe_format(img.format())));
  setWindowModified(document_.modified());
}

void MainWindow::request_preview() {
  if (document_.empty()) return;
  const ChainSettings s = panel_->settings();
  if (full_) release_later(std::exchange(full_, std::nullopt));
  requested_chain_ = s;
  if (s.filters.empty()) {
    engine_->cancel();
    requested_ = 0;
    preview_pending_ = false;
    view_->clear_after();
    progress_->hide();
    timing_label_->clear();
    check_idle();
    return;
  }
  PreviewView v;
  v.image_width = document_.image().width();
  v.image_height = document_.image().height();
  const QRect r = view_->visible_image_rect();
  v.visible = {r.x(), r.y(), r.width(), r.height()};
  v.scale = view_->device_zoom();
  v.border = s.border.mode;
  requested_ = engine_->request(s, panel_->devices(), v);
  preview_pending_ = true;
  first_latency_ms_ = -1;
  progress_->setRange(0, 100);
  progress_->setValue(0);
  progress_->show();
}

const PreviewResult* MainWindow::current_full_result() const {
  // Devices do not change the pixels (every backend gives the same bits), so only the chain counts.
  if (full_ && full_->generation == requested_ && requested_chain_ == panel_->settings()) return &*full_;
  return nullptr;
}

void MainWindow::on_result(const PreviewResult& r) {
  if (r.generation != requested_) return;
  if (r.pass != PreviewPass::Full) {
    view_->set_overlay(r.display.base, r.shown);
    if (first_latency_ms_ < 0) first_latency_ms_ = r.latency_ms;
    timing_label_->setText(tr("Preview: %1 in %2 ms…").arg(pass_name(r.pass, r.level)).arg(r.latency_ms, 0, 'f', 0));
    emit preview_shown(r.pass, r.latency_ms);
    return;
  }
  view_->set_after(r.display);
  if (full_) release_later(std::exchange(full_, r));
  else full_ = r;
  preview_pending_ = false;
  progress_->hide();
  const Image& img = document_.image();
  const QString what = tr("%1×%2 in %3 ms (filter %4 ms) on %5")
                           .arg(img.width())
                           .arg(img.height())
                           .arg(r.latency_ms, 0, 'f', 0)
                           .arg(r.job_ms, 0, 'f', 0)
                           .arg(devices_used(*r.report));
  timing_label_->setText(first_latency_ms_ >= 0
                             ? tr("Preview: first view %1 ms · full %2").arg(first_latency_ms_, 0, 'f', 0).arg(what)
                             : tr("Preview: %1").arg(what));
  const JobView job = job_view(*r.report,
                               tr("Preview of %1 · %2 · %3×%4 %5 · %6 tiles of %7×%8")
                                   .arg(document_.display_name(), r.chain_text)
                                   .arg(img.width())
                                   .arg(img.height())
                                   .arg(describe_format(img.format()))
                                   .arg(r.report->tiles)
                                   .arg(r.report->tile.width)
                                   .arg(r.report->tile.height),
                               img.format().pixel_bytes());
  devices_->show_job(job);
  timeline_->set_job(job);
  if (!r.report->failures.empty())
    show_info(tr("%1 tile attempts failed on a device and were retried elsewhere (first: %2).")
                  .arg(r.report->failures.size())
                  .arg(QString::fromStdString(r.report->failures.front().message)));
  emit preview_shown(r.pass, r.latency_ms);
  if (apply_pending_) finish_apply(r);
  check_idle();
}

void MainWindow::apply() {
  if (document_.empty()) {
    show_info(tr("Open an image first."));
    return;
  }
  const ChainSettings s = panel_->settings();
  if (s.filters.empty()) {
    show_info(tr("Add a filter to the chain first (Add filter)."));
    return;
  }
  if (apply_watcher_.isRunning() || apply_pending_) return;
  apply_pending_ = true;
  apply_chain_ = s;
  panel_->set_applying(true);
  if (const PreviewResult* r = current_full_result()) finish_apply(*r);
  else if (!(preview_pending_ && requested_chain_ == s)) request_preview();
}

void MainWindow::finish_apply(const PreviewResult& full) {
  apply_pending_ = false;
  apply_text_ = full.chain_text;
  const Image pixels = full.pixels;
  const ShownImage display = full.display;
  apply_watcher_.setFuture(QtConcurrent::run([pixels, display]() -> Applied {
    try {
      return {make_state(pixels, display), {}};
    } catch (const std::bad_alloc&) {
      return {{}, tr("Not enough memory to apply the filters to the whole image.")};
    } catch (const std::exception& e) {
      return {{}, QString::fromUtf8(e.what())};
    }
  }));
}

bool MainWindow::idle() const {
  return !load_watcher_.isRunning() && !save_watcher_.isRunning() && !apply_watcher_.isRunning() && !engine_->busy() &&
         !apply_pending_ && !preview_pending_;
}

void MainWindow::check_idle() {
  if (idle()) emit became_idle();
}

void MainWindow::save_to(const QString& path, int quality) {
  if (document_.empty()) return;
  if (save_watcher_.isRunning()) {
    show_info(tr("Still saving; try again in a moment."));
    return;
  }
  saving_path_ = path;
  save_quality_ = quality;
  progress_->setRange(0, 0);
  progress_->show();
  statusBar()->showMessage(tr("Saving %1…").arg(path));
  const Image image = document_.image();
  const Metadata metadata = document_.metadata();
  const WriteOptions options = document_.write_options(quality);
  save_watcher_.setFuture(QtConcurrent::run([image, path, metadata, options]() -> QString {
    try {
      encode_file(path.toStdString(), image.view(), options, metadata);
      return {};
    } catch (const std::exception& e) {
      return QString::fromUtf8(e.what());
    }
  }));
}

void MainWindow::show_error(const QString& message) { messages_->show_message(MessageBar::Level::Error, message); }
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

void MainWindow::restore_settings() {
  QSettings s;
  if (s.contains("window/geometry")) restoreGeometry(s.value("window/geometry").toByteArray());
  if (s.contains("window/state")) restoreState(s.value("window/state").toByteArray());
  const QString devices = s.value("devices").toString();
  if (!devices.isEmpty()) panel_->set_devices(devices);
}

void MainWindow::save_settings() {
  if (!options_.use_settings) return;
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  s.setValue("devices", panel_->devices());
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (options_.confirm_close && !confirm_discard()) {
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
