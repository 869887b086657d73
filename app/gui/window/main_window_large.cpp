// The main window's large documents (LargeSource): the file stays on disk and the view shows its
// overview, and zoomed past it the visible region of a TIFF read at full resolution; the preview
// filters the overview with spatial parameters scaled to it, and Save streams the file through the
// chain band by band (tf::filter_file) with progress, cancel, and the time split between decoding,
// filtering and encoding on the timeline.
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>
#include <QTimer>
#include <QtConcurrent>
#include <algorithm>

#include "main_window.hpp"
#include "model/job_view.hpp"
#include "model/preview_plan.hpp"
#include "panels/device_panel.hpp"
#include "panels/filter_panel.hpp"
#include "platform/device_hub.hpp"
#include "tilefilter/error.hpp"
#include "tilefilter/filter.hpp"
#include "tilefilter/overview.hpp"
#include "views/image_view.hpp"
#include "views/timeline_view.hpp"

namespace tf::gui {

namespace {
constexpr long long kDetailPixels = 16LL << 20;  // the largest region read at full resolution

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
  connect(detail_timer_, &QTimer::timeout, this, &MainWindow::request_detail);
  connect(view_, &ImageView::view_changed, this, [this] {
    if (document_.large()) detail_timer_->start();
  });
  connect(&detail_watcher_, &QFutureWatcher<Detail>::finished, this, [this] {
    const Detail d = detail_watcher_.result();
    if (d.source == document_.state().large) {
      if (!d.error.isEmpty()) show_error(d.error);
      else view_->set_detail(d.image, d.shown);
    }
    if (std::exchange(detail_again_, false)) request_detail();
    check_idle();
  });
}

void MainWindow::request_detail() {
  const std::shared_ptr<const LargeSource> large = document_.state().large;
  // Only files with random access (TIFF strips and tiles) read a region without decoding from the top;
  // PNG and JPEG keep showing the overview.
  if (!large || document_.state().file.access != RowAccess::Random) return;
  if (detail_watcher_.isRunning()) {
    detail_again_ = true;
    return;
  }
  const int f = large->factor;
  const QRect visible = view_->visible_image_rect().intersected(QRect(QPoint(0, 0), view_->before_image().size()));
  const QRect file = QRect(visible.x() * f, visible.y() * f, visible.width() * f, visible.height() * f)
                         .intersected(QRect(0, 0, large->width, large->height));
  // Past the overview's resolution only, and no more than a screenful or two of file pixels.
  if (view_->device_zoom() <= 1.0 || file.isEmpty() ||
      static_cast<long long>(file.width()) * file.height() > kDetailPixels) {
    view_->set_detail({}, {});
    return;
  }
  detail_watcher_.setFuture(QtConcurrent::run([large, file]() -> Detail {
    Detail d;
    d.source = large;
    try {
      auto reader = tf::open_image(large->path);
      const Image region = read_region(*reader, {file.x(), file.y(), file.width(), file.height()});
      d.image = PreviewEngine::paint_ready(region);
      const double f = large->factor;
      d.shown = QRectF(file.x() / f, file.y() / f, file.width() / f, file.height() / f);
    } catch (const std::exception& e) {
      d.error = QString::fromUtf8(e.what());
    }
    return d;
  }));
}

ChainSettings MainWindow::preview_chain(const ChainSettings& chain) const {
  const LargeSource* large = document_.large();
  if (!large || large->factor == 1) return chain;
  ChainSettings scaled = chain;
  scaled.filters = scaled_for_proxy(chain.filters, large->factor);
  return scaled;
}

void MainWindow::save_large(const QString& path, int quality) {
  const LargeSource& large = *document_.large();
  if (QFileInfo(path).absoluteFilePath() == QFileInfo(QString::fromStdString(large.path)).absoluteFilePath()) {
    progress_->hide();
    show_error(tr("%1 is the open file, which stays on disk while it is shown: save to another file.").arg(path));
    return;
  }
  const ChainSettings chain = panel_->settings();
  const std::string input = large.path;
  const QString devices = panel_->devices();
  StreamOptions options;
  options.write = document_.write_options(quality);
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  save_cancel_ = cancel;
  auto report = std::make_shared<StreamReport>();
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  cancel_save_->show();
  statusBar()->showMessage(tr("Filtering %1 into %2 band by band…").arg(document_.display_name(), path));
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
  const StreamReport& r = *report;
  save_cancel_.reset();
  document_.mark_saved(saving_path_);
  const QString split = tr("%1×%2 in %3 s: decode %4 s, filter %5 s, encode %6 s (%7 bands of %8 rows)")
                            .arg(r.width)
                            .arg(r.height)
                            .arg(r.wall_s, 0, 'f', 1)
                            .arg(r.decode_s, 0, 'f', 1)
                            .arg(r.filter_s, 0, 'f', 1)
                            .arg(r.encode_s, 0, 'f', 1)
                            .arg(r.bands)
                            .arg(r.band_rows);
  timing_label_->setText(tr("Saved: %1").arg(split));
  statusBar()->showMessage(tr("Saved %1").arg(saving_path_), 5000);
  const JobView job =
      job_view(r.job, tr("Save of %1 · %2").arg(document_.display_name(), split), r.format.pixel_bytes());
  devices_->show_job(job);
  timeline_->set_job(job);
  emit saved(saving_path_);
}

}  // namespace tf::gui
