// The main window's document and jobs: opening and saving files off the GUI thread, the preview
// requests and their results, Apply. main_window.cpp builds the window; main_window_actions.cpp
// its menus and dialogs.
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QStatusBar>
#include <QtConcurrent>

#include "main_window.hpp"
#include "model/apply_command.hpp"
#include "model/image_convert.hpp"
#include "model/job_view.hpp"
#include "panels/device_panel.hpp"
#include "panels/filter_panel.hpp"
#include "panels/message_bar.hpp"
#include "platform/device_hub.hpp"
#include "platform/recent_files.hpp"
#include "platform/release_later.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/error.hpp"
#include "views/image_view.hpp"
#include "views/timeline_view.hpp"

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

void MainWindow::open_file(const QString& path) {
  if (options_.confirm_close && !confirm_discard()) return;
  if (load_watcher_.isRunning()) {
    show_info(tr("Still opening the previous file; try again in a moment."));
    return;
  }
  statusBar()->showMessage(tr("Opening %1…").arg(QFileInfo(path).fileName()));
  progress_->setRange(0, 0);
  progress_->show();
  QPointer<QProgressBar> bar = progress_;
  auto progress = [bar](double fraction) {  // large documents: the overview read band by band
    QMetaObject::invokeMethod(
        bar,
        [bar, fraction] {
          if (!bar) return;
          bar->setRange(0, 1000);
          bar->setValue(static_cast<int>(fraction * 1000));
        },
        Qt::QueuedConnection);
  };
  load_watcher_.setFuture(QtConcurrent::run([path, progress]() -> Loaded {
    Loaded out;
    out.path = path;
    out.name = QFileInfo(path).fileName();
    try {
      out.state = load_state(path, progress);
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
  detail_chain_.reset();
  if (document_.large()) detail_timer_->start();  // another file: its region
  update_title();
}

void MainWindow::update_title() {
  if (document_.empty()) {
    setWindowTitle(QStringLiteral("TileFilter"));
    return;
  }
  const Image& img = document_.image();
  const QString overview =
      document_.large() ? tr(" (on disk, shown at 1/%1)").arg(document_.large()->factor) : QString();
  setWindowTitle(QStringLiteral("%1[*] — %2×%3 %4%5 — TileFilter")
                     .arg(document_.display_name())
                     .arg(document_.width())
                     .arg(document_.height())
                     .arg(describe_format(img.format()), overview));
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
    chain_changed_for_detail();
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
  requested_ = engine_->request(preview_chain(s), panel_->devices(), v);
  preview_pending_ = true;
  // The panel names the chain being previewed, not the job it superseded.
  QStringList labels;
  for (const auto& e : s.filters) labels << entry_label(e);
  devices_->show_pending(tr("Preview of %1 · %2 — filtering…").arg(document_.display_name(), labels.join(" → ")));
  first_latency_ms_ = -1;
  progress_->setRange(0, 100);
  progress_->setValue(0);
  progress_->show();
  chain_changed_for_detail();
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
    const QString where = r.on_cpu_workers ? tr(" on the CPU workers") : QString();
    timing_label_->setText(
        tr("Preview: %1%2 in %3 ms…").arg(pass_name(r.pass, r.level), where).arg(r.latency_ms, 0, 'f', 0));
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
  show_job(job);
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
  if (document_.large()) {  // the whole file, band by band, into a file of the document
    if (save_watcher_.isRunning()) {
      show_info(tr("Still saving; try again in a moment."));
      return;
    }
    apply_large(s);
    return;
  }
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
    Applied out;
    try {
      *out.state = make_state(pixels, display);
    } catch (const std::bad_alloc&) {
      out.error = tr("Not enough memory to apply the filters to the whole image.");
    } catch (const std::exception& e) {
      out.error = QString::fromUtf8(e.what());
    }
    return out;
  }));
}

bool MainWindow::idle() const {
  return !load_watcher_.isRunning() && !save_watcher_.isRunning() && !apply_watcher_.isRunning() &&
         !detail_watcher_.isRunning() && !detail_timer_->isActive() && !engine_->busy() && !apply_pending_ &&
         !preview_pending_;
}

void MainWindow::check_idle() {
  if (idle()) emit became_idle();
}

void MainWindow::save_to(const QString& path, const JpegChoice& jpeg) {
  if (document_.empty()) return;
  if (save_watcher_.isRunning()) {
    show_info(tr("Still saving; try again in a moment."));
    return;
  }
  if (document_.large() && apply_watcher_.isRunning()) {  // Save writes the state Apply is making
    show_info(tr("Still applying; save when it has finished."));
    return;
  }
  saving_path_ = path;
  save_jpeg_ = jpeg;
  stream_report_.reset();
  if (document_.large()) {
    save_large(path, jpeg);
    return;
  }
  progress_->setRange(0, 0);
  progress_->show();
  statusBar()->showMessage(tr("Saving %1…").arg(path));
  const Image image = document_.image();
  const Metadata metadata = document_.metadata();
  const WriteOptions options = document_.write_options(jpeg);
  save_watcher_.setFuture(QtConcurrent::run([image, path, metadata, options]() -> QString {
    try {
      encode_file(path.toStdString(), image.view(), options, metadata);
      return {};
    } catch (const std::exception& e) {
      return QString::fromUtf8(e.what());
    }
  }));
}

}  // namespace tf::gui
