// The main window's large documents (LargeSource): the file stays on disk and the view shows its
// overview; the preview filters the overview with spatial parameters scaled to it. Zoomed past the
// overview, the visible region is read at full resolution with the chain's halo and filtered on the
// devices (model/large_file.hpp), drawn over both sides once it arrives. Apply and Save stream the
// file through the chain band by band (tf::filter_file) with progress, cancel, and the time split
// between decoding, filtering and encoding on the timeline; Apply's result is a file of the document
// that the undo stack switches to and from.
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>
#include <QTimer>
#include <QtConcurrent>
#include <algorithm>

#include "main_window.hpp"
#include "model/apply_command.hpp"
#include "model/job_view.hpp"
#include "model/large_file.hpp"
#include "model/preview_plan.hpp"
#include "panels/device_panel.hpp"
#include "panels/filter_panel.hpp"
#include "platform/device_hub.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/io/overview.hpp"
#include "tilefilter/util/error.hpp"
#include "views/image_view.hpp"
#include "views/timeline_view.hpp"

namespace tf::gui {

namespace {

// The image of `input` written to `output` band by band (a format conversion), metadata kept.
void copy_file(const std::string& input, const std::string& output, const StreamOptions& options,
               const std::atomic<bool>& cancel) {
  auto reader = tf::open_image(input);
  const ImageInfo& info = reader->info();
  auto writer = create_image(output, info.width, info.height, info.format, info.metadata, options.write);
  const int rows =
      std::max(1, static_cast<int>((32ULL << 20) / (static_cast<std::size_t>(info.width) * info.format.pixel_bytes())));
  Image band(info.width, std::min(rows, info.height), info.format);
  for (int y = 0; y < info.height; y += rows) {
    if (cancel) throw Error(ErrorKind::Cancelled, "cancelled");
    tf::ImageView part = band.view();
    part.height = std::min(rows, info.height - y);
    reader->read_rows(y, part);
    writer->write_rows(part);
    if (options.progress) options.progress(static_cast<double>(y + part.height) / info.height);
  }
  writer->finish();
}

}  // namespace

void MainWindow::setup_large_view() {
  detail_timer_ = new QTimer(this);
  detail_timer_->setSingleShot(true);
  detail_timer_->setInterval(150);
  connect(detail_timer_, &QTimer::timeout, this, [this] {
    request_detail();
    check_idle();  // the timer counts as busy (idle()); nothing may have started
  });
  connect(view_, &ImageView::view_changed, this, [this] {
    if (document_.large()) detail_timer_->start();
  });
  connect(&detail_watcher_, &QFutureWatcher<Detail>::finished, this, &MainWindow::show_detail);
}

void MainWindow::chain_changed_for_detail() {
  if (!document_.large()) return;
  // The filtered overview shows the new chain until its region arrives; the region of the old one
  // would contradict it.
  if (detail_chain_ && !(*detail_chain_ == panel_->settings())) {
    view_->set_after_detail({}, {});
    detail_chain_.reset();
  }
  detail_timer_->start();
}

void MainWindow::request_detail() {
  const std::shared_ptr<const LargeSource> large = document_.state().large;
  if (!large) return;
  if (detail_watcher_.isRunning()) {  // made stale by this request: cancelled, then asked again
    if (detail_cancel_) *detail_cancel_ = true;
    detail_again_ = true;
    return;
  }
  const int f = large->factor;
  const QRect visible = view_->visible_image_rect().intersected(QRect(QPoint(0, 0), view_->before_image().size()));
  const QRect file = QRect(visible.x() * f, visible.y() * f, visible.width() * f, visible.height() * f)
                         .intersected(QRect(0, 0, large->width, large->height));
  const Rect region{file.x(), file.y(), file.width(), file.height()};
  // Past the overview's resolution only, and no more than a screenful or two of file pixels.
  if (view_->device_zoom() <= 1.0 || file.isEmpty() || region.area() > kRegionPixels) {
    view_->set_detail({}, {});
    view_->set_after_detail({}, {});
    detail_chain_.reset();
    return;
  }
  if (!region_reads_quickly(document_.state().file, region)) {
    statusBar()->showMessage(tr("%1 decodes from the top: this far down the view shows the overview "
                                "(a tiled TIFF shows every region at full resolution)")
                                 .arg(document_.display_name()),
                             5000);
    return;
  }
  const ChainSettings chain = panel_->settings();
  const std::string devices = panel_->devices().toStdString();
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  detail_cancel_ = cancel;
  detail_watcher_.setFuture(QtConcurrent::run([large, region, chain, devices, cancel]() -> Detail {
    Detail d;
    d.source = large;
    d.chain = chain;
    try {
      const RegionPreview r = preview_file_region(large->path, region, chain, devices, cancel.get());
      d.before = PreviewEngine::paint_ready(r.before);
      if (!r.after.empty()) d.after = PreviewEngine::paint_ready(r.after);
      const double f = large->factor;
      d.shown = QRectF(region.x / f, region.y / f, region.width / f, region.height / f);
      d.read_ms = r.read_ms;
      d.filter_ms = r.filter_ms;
      d.report = r.report;
      d.pixel_bytes = r.before.format().pixel_bytes();
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Cancelled) d.error = QString::fromUtf8(e.what());
    } catch (const std::exception& e) {
      d.error = QString::fromUtf8(e.what());
    }
    return d;
  }));
}

void MainWindow::show_detail() {
  const Detail d = detail_watcher_.result();
  const bool again = std::exchange(detail_again_, false);
  // Dropped when the document changed; a region of another place is still right where it lies.
  if (d.source.lock() == document_.state().large) {
    if (!d.error.isEmpty()) {
      show_error(d.error);
    } else if (!d.before.isNull()) {
      view_->set_detail(d.before, d.shown);
      if (d.chain == panel_->settings() && !d.after.isNull()) {
        view_->set_after_detail(d.after, d.shown);
        detail_chain_ = d.chain;
        const QString what = tr("visible region %1×%2 at full resolution: read %3 ms, filtered %4 ms")
                                 .arg(d.after.width())
                                 .arg(d.after.height())
                                 .arg(d.read_ms, 0, 'f', 0)
                                 .arg(d.filter_ms, 0, 'f', 0);
        timing_label_->setText(tr("Preview: %1").arg(what));
        const JobView job =
            job_view(*d.report, tr("Preview of %1 · %2").arg(document_.display_name(), what), d.pixel_bytes);
        show_job(job);
      }
    }
  }
  if (again) request_detail();
  check_idle();
}

void MainWindow::start_streaming(const QString& message) {
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->show();
  cancel_save_->show();
  statusBar()->showMessage(message);
}

bool MainWindow::file_in_use(const QString& path) const {
  const QString target = QFileInfo(path).absoluteFilePath();
  auto same = [&](const DocumentState& s) {
    return s.large && QFileInfo(QString::fromStdString(s.large->path)).absoluteFilePath() == target;
  };
  if (same(document_.state())) return true;
  const QUndoStack* undo = document_.undo_stack();
  for (int i = 0; i < undo->count(); ++i)
    if (const auto* step = dynamic_cast<const ApplyCommand*>(undo->command(i)))
      if (same(step->before()) || same(step->after())) return true;
  return false;
}

void MainWindow::apply_large(const ChainSettings& chain) {
  const std::shared_ptr<QTemporaryDir> folder = document_.temp_folder();
  if (!folder->isValid()) {
    show_error(tr("No temporary folder for the result: %1").arg(folder->errorString()));
    return;
  }
  const std::string output = folder->filePath(QStringLiteral("apply-%1.tif").arg(++temp_files_)).toStdString();
  const std::shared_ptr<const LargeSource> source = document_.state().large;
  const std::string devices = panel_->devices().toStdString();
  const WriteOptions write = document_.write_options(save_jpeg_);
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  save_cancel_ = cancel;
  apply_chain_ = chain;
  panel_->set_applying(true);
  start_streaming(tr("Applying the chain to %1 band by band…").arg(document_.display_name()));
  QPointer<QProgressBar> bar = progress_;
  auto progress = [bar](double fraction) {
    QMetaObject::invokeMethod(
        bar,
        [bar, fraction] {
          if (bar) bar->setValue(static_cast<int>(fraction * 1000));
        },
        Qt::QueuedConnection);
  };
  apply_watcher_.setFuture(
      QtConcurrent::run([source, output, folder, chain, devices, write, progress, cancel]() -> Applied {
        Applied out;
        try {
          QStringList specs;
          for (const auto& s : to_specs(chain.filters)) specs << QString::fromStdString(s);
          out.text = specs.join(QStringLiteral(" → "));
          LargeApplied r = apply_to_file(*source, output, folder, chain, devices, write, progress, cancel.get());
          *out.state = std::move(r.state);
          out.stream = std::make_shared<StreamReport>(std::move(r.report));
        } catch (const Error& e) {
          out.error = e.kind() == ErrorKind::Cancelled ? tr("Apply cancelled: the image is unchanged.")
                                                       : QString::fromUtf8(e.what());
        } catch (const std::bad_alloc&) {
          out.error = tr("Not enough memory to filter the image band by band.");
        } catch (const std::exception& e) {
          out.error = QString::fromUtf8(e.what());
        }
        return out;
      }));
}

ChainSettings MainWindow::preview_chain(const ChainSettings& chain) const {
  const LargeSource* large = document_.large();
  if (!large || large->factor == 1) return chain;
  ChainSettings scaled = chain;
  scaled.filters = scaled_for_proxy(chain.filters, large->factor);
  return scaled;
}

void MainWindow::save_large(const QString& path, const JpegChoice& jpeg) {
  const LargeSource& large = *document_.large();
  if (file_in_use(path)) {  // the open file, or one that Undo goes back to
    progress_->hide();
    show_error(tr("%1 is the open file, which stays on disk while it is shown: save to another file.").arg(path));
    return;
  }
  const ChainSettings chain = panel_->settings();
  const std::string input = large.path;
  const QString devices = panel_->devices();
  StreamOptions options;
  options.write = document_.write_options(jpeg);
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  save_cancel_ = cancel;
  auto report = std::make_shared<StreamReport>();
  start_streaming(tr("Filtering %1 into %2 band by band…").arg(document_.display_name(), path));
  QPointer<QProgressBar> bar = progress_;
  options.progress = [bar](double fraction) {
    QMetaObject::invokeMethod(
        bar,
        [bar, fraction] {
          if (bar) bar->setValue(static_cast<int>(fraction * 1000));
        },
        Qt::QueuedConnection);
  };
  save_watcher_.setFuture(QtConcurrent::run([input, path, chain, devices, options, cancel, report, this]() -> QString {
    try {
      if (chain.filters.empty()) {  // no chain: the file converted band by band
        copy_file(input, path.toStdString(), options, *cancel);
        return {};
      }
      const Chain parsed = parse_chain(to_specs(chain.filters));
      std::unique_lock lock(DeviceHub::instance().job_mutex());
      const DeviceSelection selection = DeviceHub::instance().select(devices.toStdString());
      JobOptions job;
      job.border = chain.border;
      job.cancel = cancel.get();
      *report = filter_file(input, path.toStdString(), parsed, selection.devices, job, options);
      stream_report_ = report;  // read on the GUI thread after the watcher finished
      return {};
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Cancelled) return tr("Save cancelled: %1 was not written.").arg(path);
      return QString::fromUtf8(e.what());
    } catch (const std::bad_alloc&) {
      return tr("Not enough memory to filter the image band by band.");
    } catch (const std::exception& e) {
      return QString::fromUtf8(e.what());
    }
  }));
}

void MainWindow::finish_save_large() {
  const std::shared_ptr<StreamReport> report = std::exchange(stream_report_, nullptr);
  save_cancel_.reset();
  document_.mark_saved(saving_path_);
  remember_save_folder(saving_path_);
  clear_error();
  show_stream_job(*report, tr("Save"));
  statusBar()->showMessage(tr("Saved %1").arg(saving_path_), 5000);
  emit saved(saving_path_);
}

void MainWindow::show_stream_job(const StreamReport& r, const QString& what) {
  const QString split = tr("%1×%2 in %3 s: decode %4 s, filter %5 s, encode %6 s (%7 bands of %8 rows)")
                            .arg(r.width)
                            .arg(r.height)
                            .arg(r.wall_s, 0, 'f', 1)
                            .arg(r.decode_s, 0, 'f', 1)
                            .arg(r.filter_s, 0, 'f', 1)
                            .arg(r.encode_s, 0, 'f', 1)
                            .arg(r.bands)
                            .arg(r.band_rows);
  timing_label_->setText(tr("%1: %2").arg(what, split));
  const JobView job =
      job_view(r.job, tr("%1 of %2 · %3").arg(what, document_.display_name(), split), r.format.pixel_bytes());
  show_job(job);
}

}  // namespace tf::gui
