#include "preview_engine.hpp"

#include <QMetaObject>
#include <QPointer>
#include <algorithm>
#include <chrono>

#include "image_convert.hpp"
#include "platform/background_priority.hpp"
#include "platform/device_hub.hpp"
#include "platform/release_later.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::gui {

struct PreviewEngine::Job {
  quint64 generation = 0;
  std::atomic<bool> cancel{false};
  PreviewSource source;
  ChainSettings chain;
  std::string devices;
  PreviewView view;
  std::chrono::steady_clock::time_point requested;
};

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

QString chain_text(const std::vector<std::string>& specs) {
  QStringList parts;
  for (const auto& s : specs) parts << QString::fromStdString(s);
  return parts.join(QStringLiteral(" → "));
}

}  // namespace

PreviewEngine::PreviewEngine(QObject* parent) : QObject(parent) {
  qRegisterMetaType<tf::gui::PreviewResult>();
  // A newer request cancels the older job. Two threads: a job whose devices are done may still be
  // making its display copy when the next one starts; the device lock keeps their filter jobs apart.
  pool_.setMaxThreadCount(2);
  pool_.setExpiryTimeout(-1);
}

PreviewEngine::~PreviewEngine() {
  cancel();
  pool_.waitForDone();
}

void PreviewEngine::set_source(PreviewSource source) {
  cancel();
  source_ = std::move(source);
}

void PreviewEngine::cancel() {
  if (current_) current_->cancel = true;
  current_.reset();
}

QImage PreviewEngine::paint_ready(const Image& image) {
  const QImage shown = to_display_image(image);
  return shown.convertToFormat(image.format().channels == 4 ? QImage::Format_ARGB32_Premultiplied
                                                            : QImage::Format_RGB32);
}

quint64 PreviewEngine::request(const ChainSettings& chain, const QString& devices, const PreviewView& view) {
  cancel();
  auto job = std::make_shared<Job>();
  job->generation = ++generation_;
  job->source = source_;
  job->chain = chain;
  job->devices = devices.toStdString();
  job->view = view;
  job->view.pyramid_levels = source_.pyramid ? source_.pyramid->levels() : 1;
  job->requested = std::chrono::steady_clock::now();
  current_ = job;
  ++running_;
  pool_.start([this, job] {
    lower_thread_priority();
    run(job);
    QMetaObject::invokeMethod(
        this,
        [this, g = job->generation] {
          --running_;
          emit finished(g);
        },
        Qt::QueuedConnection);
  });
  return job->generation;
}

void PreviewEngine::deliver(const std::shared_ptr<Job>& job, PreviewResult result) {
  QMetaObject::invokeMethod(
      this,
      [this, job, result = std::move(result)]() mutable {
        if (job->cancel || job != current_) {  // a newer request superseded it
          release_later(std::move(result));
          return;
        }
        result.latency_ms = ms_since(job->requested);
        emit result_ready(result);
      },
      Qt::QueuedConnection);
}

// The first pass: the visible region at full resolution, or a level's proxy of it, on the CPU workers
// when it is small and the devices include a GPU (first_pass_on_cpu).
PreviewResult PreviewEngine::first_pass(const Job& job, const PreviewStep& step, const Chain& full_chain,
                                        const DeviceSelection& selection, const JobOptions& options) {
  PreviewResult result;
  const auto t0 = std::chrono::steady_clock::now();
  const int level = step.level;
  const Image& src = level == 0 ? job.source.image : job.source.pyramid->level(level);
  const Chain chain = level == 0 ? full_chain : parse_chain(to_specs(scaled_for_proxy(job.chain.filters, 1 << level)));
  const Rect region = grow_clipped(step.visible, chain_halo(chain), src.width(), src.height());
  const bool with_gpu = std::any_of(selection.devices.begin(), selection.devices.end(),
                                    [](const DevicePtr& d) { return d->info().kind != DeviceKind::Cpu; });
  result.on_cpu_workers =
      first_pass_on_cpu(chain, region.area(), src.format().channels, with_gpu, DeviceHub::instance().cpu_cores());
  const DeviceSelection cpu = result.on_cpu_workers ? DeviceHub::instance().select("cpu") : DeviceSelection{};
  const Image filtered =
      filter_image(crop(src, region), chain, result.on_cpu_workers ? cpu.devices : selection.devices, options);
  const Rect keep{step.visible.x - region.x, step.visible.y - region.y, step.visible.width, step.visible.height};
  result.job_ms = ms_since(t0);
  result.display = ShownImage(paint_ready(crop(filtered, keep)));
  const int f = 1 << level;
  // Unclipped: the last proxy pixel may reach past the image; the view clips when painting.
  result.shown = QRect(step.visible.x * f, step.visible.y * f, step.visible.width * f, step.visible.height * f);
  return result;
}

void PreviewEngine::run(const std::shared_ptr<Job>& job) {
  if (job->cancel) return;
  const Image& base = job->source.image;
  auto fail = [&](const QString& message) {
    QMetaObject::invokeMethod(
        this,
        [this, job, message] {
          if (job == current_) emit failed(job->generation, message);
        },
        Qt::QueuedConnection);
  };
  if (base.empty() || job->chain.filters.empty()) return;
  try {
    // Specs (and kernel files) are made here, off the GUI thread, from the chain as it was requested.
    const std::vector<std::string> specs = to_specs(job->chain.filters);
    const Chain full_chain = parse_chain(specs);
    const QString text = chain_text(specs);
    std::unique_lock devices_lock(DeviceHub::instance().job_mutex());
    if (job->cancel) return;
    const DeviceSelection selection = DeviceHub::instance().select(job->devices);
    JobOptions options;
    options.border = job->chain.border;
    options.cancel = &job->cancel;
    for (const PreviewStep& step : plan_preview(job->view)) {
      if (job->cancel) return;
      PreviewResult result;
      if (step.pass == PreviewPass::Full) {
        const auto t0 = std::chrono::steady_clock::now();
        JobOptions full = options;
        auto last_percent = std::make_shared<std::atomic<int>>(-1);  // progress comes from every worker
        full.progress = [this, job, last_percent](int done, int total) {
          const int percent = total ? done * 100 / total : 0;
          if (last_percent->exchange(percent) == percent) return;
          QMetaObject::invokeMethod(
              this,
              [this, job, done, total] {
                if (job == current_) emit progress(job->generation, done, total);
              },
              Qt::QueuedConnection);
        };
        auto report = std::make_shared<JobReport>();
        result.pixels = Image(base.width(), base.height(), base.format(), DeviceHub::host_allocator());
        *report = run_filter(base.view(), result.pixels.view(), full_chain, selection.devices, full);
        result.job_ms = ms_since(t0);
        result.report = std::move(report);
        result.shown = QRect(0, 0, base.width(), base.height());
        // The devices are done; the next request's first pass need not wait for the display copy and
        // its mip levels (tens of ms at 24 Mpix), which a newer request abandons between the two.
        devices_lock.unlock();
        if (job->cancel) return;
        QImage shown = paint_ready(result.pixels);
        if (job->cancel) return;
        result.display = make_shown(std::move(shown));
      } else {
        result = first_pass(*job, step, full_chain, selection, options);
      }
      result.generation = job->generation;
      result.pass = step.pass;
      result.level = step.level;
      result.chain_text = text;
      deliver(job, std::move(result));
    }
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Cancelled) fail(QString::fromUtf8(e.what()));
  } catch (const std::bad_alloc&) {
    fail(tr("Out of memory while filtering the preview; try a smaller image or fewer filters."));
  } catch (const std::exception& e) {
    fail(QString::fromUtf8(e.what()));
  }
}

}  // namespace tf::gui
