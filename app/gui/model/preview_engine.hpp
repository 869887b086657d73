// The live preview: every request runs off the GUI thread and cancels the job before it (latest wins —
// a slider drag never queues up work; the device lock lets one job at a time filter). A request computes
// the visible region or a screen-sized proxy first — on the CPU workers when it is small and the devices
// include a GPU — then the whole image at full resolution (preview_plan.hpp). Results come
// back to the GUI thread as queued signals, carrying the pixels ready to paint and, for the full
// pass, core's job report.
#pragma once
#include <QElapsedTimer>
#include <QImage>
#include <QObject>
#include <QString>
#include <QThreadPool>
#include <atomic>
#include <memory>

#include "filter_entry.hpp"
#include "mip_levels.hpp"
#include "preview_plan.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/image/pyramid.hpp"

namespace tf::gui {

struct PreviewSource {
  Image image;                                  // the document's current pixels
  std::shared_ptr<const ImagePyramid> pyramid;  // may be null while it is being built
};

struct PreviewResult {
  quint64 generation = 0;
  PreviewPass pass = PreviewPass::Full;
  int level = 0;
  QRect shown;                              // the part of the base image that `display` covers (base pixels)
  ShownImage display;                       // ready to paint (with mip levels for the full pass)
  Image pixels;                             // Full pass: the filtered image (what Apply commits)
  std::shared_ptr<const JobReport> report;  // Full pass
  QString chain_text;                       // the specs, for labels
  bool on_cpu_workers = false;              // a first pass the CPU workers took (first_pass_on_cpu)
  double job_ms = 0;                        // the filter job alone
  double latency_ms = 0;                    // from request() until this result was ready to paint
};

class PreviewEngine : public QObject {
  Q_OBJECT
 public:
  explicit PreviewEngine(QObject* parent = nullptr);
  ~PreviewEngine() override;

  void set_source(PreviewSource source);
  // Starts a preview of `chain` on `devices` for what `view` shows; cancels any earlier one.
  quint64 request(const ChainSettings& chain, const QString& devices, const PreviewView& view);
  void cancel();
  bool busy() const { return running_ > 0; }
  quint64 generation() const { return generation_; }

  // Paint-ready form of a filtered image (RGB32 or premultiplied ARGB32), safe off the GUI thread.
  static QImage paint_ready(const Image& image);

 signals:
  void result_ready(const tf::gui::PreviewResult& result);
  void progress(quint64 generation, int done, int total);
  void failed(quint64 generation, const QString& message);
  void finished(quint64 generation);  // the request is done (completed, failed or cancelled)

 private:
  struct Job;
  void run(const std::shared_ptr<Job>& job);
  PreviewResult first_pass(const Job& job, const PreviewStep& step, const Chain& full_chain,
                           const DeviceSelection& selection, const JobOptions& options);
  void deliver(const std::shared_ptr<Job>& job, PreviewResult result);

  QThreadPool pool_;
  PreviewSource source_;
  std::shared_ptr<Job> current_;
  quint64 generation_ = 0;
  std::atomic<int> running_{0};
};

}  // namespace tf::gui

Q_DECLARE_METATYPE(tf::gui::PreviewResult)
