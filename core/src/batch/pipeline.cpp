// The batch pipeline: decode threads -> one filter worker per device -> encode threads. Memory is
// bounded by a byte budget taken when a file's pixels are allocated (its source and, when a filter
// follows, its result), so decoders wait while the devices or the encoders are behind.
// BatchRun (batch_run.hpp) runs it: here its run, bookkeeping and progress, and the entry points; each
// stage's code in pipeline_decode.cpp, pipeline_gpu.cpp, pipeline_filter.cpp and pipeline_encode.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "batch_run.hpp"
#include "tilefilter/engine/startup.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/util/error.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace fs = std::filesystem;

namespace tf::batch_detail {

BatchRun::BatchRun(const BatchOptions& opt, BatchPlan plan, Chain chain, std::vector<DevicePtr> devices,
                   std::size_t budget, const PixelAllocator& base, BatchWorkSource* source,
                   std::vector<GpuCodecWorker> gpu_workers)
    : opt_(opt),
      source_(source),
      plan_(std::move(plan)),
      chain_(std::move(chain)),
      devices_(std::move(devices)),
      budget_(budget),
      pool_(base, budget + budget / 4),
      bytes_(budget / 4),
      to_filter_(2 * devices_.size() + 2),
      to_encode_(static_cast<std::size_t>(encode_threads()) + 2),
      gpu_workers_(std::move(gpu_workers)),
      to_gpu_(gpu_workers_.size() * static_cast<std::size_t>(gpu_batch()) + 1),
      out_root_(fs::weakly_canonical(fs::absolute(opt.output_dir)).string()) {
  for (std::size_t g = 0; g < gpu_workers_.size(); ++g)
    if (!gpu_workers_[g].lane && first_of_its_gpu(g)) ++first_lanes_->pending;
  const std::size_t n = plan_.items.size();
  results_.resize(n);
  finished_.assign(n, 0);
  begun_.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& item = plan_.items[i];
    auto& r = results_[i];
    r.input = item.input;
    r.output = item.output;
    r.input_bytes = item.input_bytes;
    r.decoder = codec_for(item.input);
    bytes_total_ += item.input_bytes;
  }
  images_per_device_.assign(devices_.size() + 1, 0);
  stream_files_ = !chain_.empty() && gpu_workers_.empty() && !devices_.empty() &&
                  std::all_of(devices_.begin(), devices_.end(),
                              [](const DevicePtr& d) { return d->info().kind == DeviceKind::Cpu; });
  worker_summaries_.resize(gpu_workers_.size());
  for (std::size_t g = 0; g < gpu_workers_.size(); ++g)
    worker_summaries_[g].device = devices_[gpu_workers_[g].device]->info().id;
  utilization_.assign(devices_.size(), {0.0, 0});
}

BatchReport BatchRun::run() {
  start_s_ = tel_.now();
  std::vector<std::thread> decoders, filters, encoders;
  for (int e = 0; e < encode_threads(); ++e) encoders.emplace_back([this, e] { encode_loop(e); });
  if (!chain_.empty())
    for (int d = 0; d < static_cast<int>(devices_.size()); ++d) filters.emplace_back([this, d] { filter_loop(d); });
  std::vector<std::thread> gpu_codecs;
  for (std::size_t g = 0; g < gpu_workers_.size(); ++g) gpu_codecs.emplace_back([this, g] { gpu_loop(g); });
  for (int t = 0; t < decode_threads(); ++t) decoders.emplace_back([this, t] { decode_loop(t); });
  std::thread sampler([this] { sample_loop(); });

  for (auto& t : decoders) t.join();
  gpu_queue_closed_ = true;
  to_gpu_.close();
  for (auto& t : gpu_codecs) t.join();
  decoders_done_ = true;
  if (!chain_.empty()) {
    to_filter_.close();
    for (auto& t : filters) t.join();
  }
  to_encode_.close();
  for (auto& t : encoders) t.join();
  {
    std::lock_guard lock(sampler_mutex_);
    sampler_stop_ = true;
  }
  sampler_cv_.notify_all();
  sampler.join();

  BatchReport report;
  report.wall_s = tel_.now() - start_s_;
  report.cancelled = stopping();
  for (std::size_t i = 0; i < results_.size(); ++i)
    if (!finished_[i]) {
      results_[i].status = Status::Cancelled;
      results_[i].reason = "not started: the batch was interrupted";
    }
  for (const auto& r : results_) {
    // The codec threads' totals: a GPU codec's times are its own (FileResult, records).
    if (!is_gpu_codec(r.decoder)) report.decode_s += r.decode_s;
    if (!is_gpu_codec(r.encoder)) report.encode_s += r.encode_s;
    report.decode_cpu_s += r.decode_cpu_s;
    report.encode_cpu_s += r.encode_cpu_s;
    if (r.status == Status::Ok) report.megapixels += static_cast<double>(r.width) * r.height / 1e6;
  }
  report.files = std::move(results_);
  report.skipped = std::move(plan_.skipped);
  report.notes = std::move(plan_.notes);
  for (const auto& d : devices_) report.device_names.push_back(d->info().id);
  report.device_names.push_back("cpu-fallback");
  report.records = tel_.records();
  report.devices = summarize(report.records, report.device_names, report.wall_s);
  for (std::size_t d = 0; d < utilization_.size(); ++d)
    if (utilization_[d].second > 0) report.devices[d].mean_utilization = utilization_[d].first / utilization_[d].second;
  report.images_per_device = images_per_device_;
  report.codec_workers = worker_summaries_;
  if (!gpu_workers_.empty()) report.gpu_codec_batch = gpu_batch();
  if (std::string late = tf::batch::late_gpus_note(report.codec_workers, report.wall_s); !late.empty())
    report.notes.push_back(std::move(late));
  report.decode_threads = decode_threads();
  report.encode_threads = encode_threads();
  report.max_inflight_bytes = budget_.cap();
  report.peak_inflight_bytes = budget_.peak();
  report.memory_wait_s = budget_.waited_s();
  if (debug_log())
    std::fprintf(stderr, "[batch] peak in flight %.1f MiB of %.1f MiB\n", budget_.peak() / 1048576.0,
                 budget_.cap() / 1048576.0);
  return report;
}

// current_ holds the files a thread works on now (decode, filter or encode), not those that wait
// in a queue between two stages: what a person watching the batch calls "in flight".
void BatchRun::started(int i) {
  std::lock_guard lock(progress_mutex_);
  current_.push_back(i);
  if (!begun_[i]) {
    begun_[i] = 1;
    ++files_in_flight_;
  }
}

void BatchRun::waiting(int i) {
  std::lock_guard lock(progress_mutex_);
  current_.erase(std::remove(current_.begin(), current_.end(), i), current_.end());
}

void BatchRun::fail(int i, const std::string& reason) {
  results_[i].reason = reason;
  finish(i, Status::Failed);
}

void BatchRun::discard(int i) {
  results_[i].reason = "discarded: the batch was interrupted while this file was in flight";
  finish(i, Status::Cancelled);
}

void BatchRun::finish(int i, Status s) {
  results_[i].status = s;
  std::lock_guard lock(progress_mutex_);
  finished_[i] = 1;
  ++files_done_;
  if (begun_[i]) --files_in_flight_;
  if (s == Status::Failed) ++files_failed_;
  if (s == Status::Ok) megapixels_done_ += static_cast<double>(results_[i].width) * results_[i].height / 1e6;
  if (s == Status::Ok && !first_done_) {
    first_done_ = true;
    const double now = process_seconds();
    record_startup_step("first file written", now, now);
  }
  bytes_done_ += results_[i].input_bytes;
  current_.erase(std::remove(current_.begin(), current_.end(), i), current_.end());
  report_progress();
}

// Called with progress_mutex_ held, so callbacks never overlap and counts never go back.
void BatchRun::report_progress() {
  if (!opt_.progress) return;
  BatchProgress p;
  p.files_done = files_done_;
  p.files_in_flight = files_in_flight_;
  p.files_total = static_cast<int>(plan_.items.size());
  p.files_failed = files_failed_;
  p.megapixels_done = megapixels_done_;
  p.elapsed_s = tel_.now();
  p.bytes_done = bytes_done_;
  p.bytes_total = bytes_total_;
  p.cancelling = stopping();
  for (int i : current_) p.current.push_back(plan_.items[i].relative);
  opt_.progress(p);
}

// Device utilization samples (NVML for GPUs) and a steady progress tick for rates and ETA.
void BatchRun::sample_loop() {
  std::unique_lock lock(sampler_mutex_);
  for (bool first = true; !sampler_stop_; first = false) {
    if (!first) sampler_cv_.wait_for(lock, std::chrono::milliseconds(250));
    if (sampler_stop_) break;
    for (std::size_t d = 0; d < devices_.size(); ++d)
      if (auto s = devices_[d]->sample(); s && s->utilization >= 0) {
        utilization_[d].first += s->utilization;
        ++utilization_[d].second;
      }
    std::lock_guard progress(progress_mutex_);
    report_progress();
  }
}

}  // namespace tf::batch_detail

namespace tf {

namespace {

// The checks that fail a batch before anything is read, then the walk of IN_DIR (nothing written).
BatchPlan walk_batch(const BatchOptions& options) {
  if (!options.filters.empty()) (void)parse_chain(options.filters);  // a bad filter fails the job before the walk
  if (options.quality < 0 || options.quality > 100)
    throw Error(ErrorKind::InvalidArgument, "quality must be between 1 and 100 (0: the input's)");
  return plan_batch(options);
}

// OUT_DIR made, what an interrupted run left removed, the job record written.
void set_up_output(const BatchOptions& options, BatchPlan& plan) {
  std::error_code ec;
  fs::create_directories(options.output_dir, ec);
  if (ec)
    throw Error(ErrorKind::Io,
                fmt::format("{}: cannot create the output folder ({})", options.output_dir, ec.message()));
  if (const int stale = batch::remove_stale_temporaries(options.output_dir); stale > 0)
    plan.notes.push_back(
        fmt::format("removed {} temporary file{} left by an interrupted run", stale, stale == 1 ? "" : "s"));
  if (options.resume) {
    std::string note = batch::check_job_record(options);
    const bool any_done =
        std::any_of(plan.items.begin(), plan.items.end(), [](const auto& item) { return item.complete; });
    if (!note.empty() && any_done) plan.notes.push_back(std::move(note));
  }
  batch::write_job_record(options);
}

}  // namespace

BatchPlan prepare_batch(const BatchOptions& options) {
  BatchPlan plan = walk_batch(options);
  set_up_output(options, plan);
  return plan;
}

namespace {

using batch_detail::BatchRun;
using batch_detail::GpuCodecWorker;

// The work of a batch as the start-up choice weighs it: the pixels of the files still to do, from
// the headers of a few of them (bytes to pixels, applied to every file's bytes), each decoded and
// encoded on the CPU and filtered through the chain.
WorkEstimate batch_work(const BatchOptions& options, const BatchPlan& plan) {
  WorkEstimate w;
  if (!options.filters.empty()) w.fmas = chain_fmas_per_pixel(parse_chain(options.filters));
  double bytes = 0, sampled_bytes = 0, sampled_pixels = 0;
  int sampled = 0, channels = 3;
  for (const auto& item : plan.items) {
    if (item.complete) continue;
    bytes += static_cast<double>(item.input_bytes);
    if (sampled >= 16) continue;
    try {
      const ImageInfo info = open_image(item.input, options.limits)->info();
      sampled_pixels += static_cast<double>(info.width) * info.height;
      sampled_bytes += static_cast<double>(item.input_bytes);
      channels = info.format.channels;
      ++sampled;
    } catch (const Error&) {  // the pipeline reports it with the file's name
    }
  }
  w.pixels = sampled_bytes > 0 ? bytes * sampled_pixels / sampled_bytes : 0;
  w.channels = channels;
  w.codec_pixels = w.pixels;
  w.gpu_codecs = options.codec != CodecChoice::Cpu && have_gpu_jpeg();
  return w;
}

// "--devices all" (the default) leaves the GPUs alone, without a CUDA call, when the batch is done
// on the CPU workers sooner than a GPU starts, and takes only the first GPUs when fewer end a batch of
// JPEGs sooner (the plan's notes say so); `--codec gpu` or named devices always get the GPUs named.
DeviceSelection batch_devices(const BatchOptions& options, BatchPlan& plan) {
  if (!options.device_list.empty()) return {options.device_list, {}};
  if (options.devices == "all" && options.codec != CodecChoice::Gpu) {
    const int visible = gpus_visible_without_cuda();
    const StartupChoice choice = choose_cpu_for_small_work(batch_work(options, plan), default_threads(), visible);
    if (choice.cpu_only) {
      DeviceSelection cpu = select_devices("cpu");
      cpu.note = choice.reason;
      return cpu;
    }
    if (choice.gpus < visible) {
      const auto first = [](int n) {
        std::vector<int> ordinals(static_cast<std::size_t>(n));
        std::iota(ordinals.begin(), ordinals.end(), 0);
        return fmt::format("{}", fmt::join(ordinals, ","));
      };
      try {
        DeviceSelection some = select_devices(first(choice.gpus), options.device_memory);
        plan.notes.push_back(fmt::format("{} (--devices {} takes every GPU)", choice.reason, first(visible)));
        some.note = choice.reason;
        return some;
      } catch (const Error&) {  // one of them did not come up: every GPU, as asked
      }
    }
  }
  return select_devices(options.devices, options.device_memory);
}

// The GPU codec workers for this batch: kDefaultGpuCodecLanes (or options.gpu_codec_lanes) per GPU
// among `devices`, none for --codec cpu or in a build without nvJPEG. `note` says why there are none.
std::vector<GpuCodecWorker> gpu_codec_workers(const BatchOptions& options, const BatchPlan& plan,
                                              const std::vector<DevicePtr>& devices, std::string* note) {
  std::vector<GpuCodecWorker> workers;
  if (options.codec == CodecChoice::Cpu) return workers;
  const long long gpus = gpu_count(devices);
  const long long jpegs = std::count_if(plan.items.begin(), plan.items.end(), [](const BatchItem& item) {
    return !item.complete && batch_detail::is_jpeg_path(item.input);
  });
  const int per_gpu = options.gpu_codec_lanes > 0 ? options.gpu_codec_lanes : kDefaultGpuCodecLanes;
  // By default no more workers than batches of kDefaultGpuCodecBatch files, spread over the GPUs: a
  // worker's nvJPEG state costs 0.11-0.3 s, one after another; eight photos on four H100s took
  // 3.4-4.3 s with --codec gpu and two workers a GPU, 2.3-2.9 s with one worker in all.
  const long long in_all = options.gpu_codec_lanes > 0
                               ? per_gpu * gpus
                               : std::max(1LL, (jpegs + kDefaultGpuCodecBatch - 1) / kDefaultGpuCodecBatch);
  // The lanes themselves are made by their workers as the batch starts (gpu_loop): the GPUs' nvJPEG
  // handles and states come up together, while the CPU codecs already work.
  std::string why = have_gpu_jpeg() ? "no GPU among the devices"
                                    : "this build has no GPU JPEG codec (nvJPEG was not found when it was built)";
  long long gpu_no = 0;
  if (have_gpu_jpeg())
    for (std::size_t d = 0; d < devices.size(); ++d)
      if (devices[d]->info().kind == DeviceKind::Cuda) {
        const long long share = in_all / gpus + (gpu_no++ < in_all % gpus ? 1 : 0);
        for (long long k = 0; k < std::min<long long>(per_gpu, share); ++k)
          workers.push_back({nullptr, static_cast<int>(d)});
      }
  if (workers.empty()) *note = fmt::format("JPEGs decoded on the CPU: {}", why);
  if (workers.empty() && options.codec == CodecChoice::Gpu)
    throw Error(ErrorKind::InvalidArgument, fmt::format("--codec gpu: {}", why));
  return workers;
}

BatchReport run_on(const BatchOptions& options, BatchPlan plan, BatchWorkSource* source, DeviceSelection selection,
                   std::vector<GpuCodecWorker> gpu_workers, std::string codec_note) {
  const Chain chain = options.filters.empty() ? Chain{} : parse_chain(options.filters);
  const std::vector<DevicePtr>& devices = selection.devices;
  const int gpus = gpu_count(devices);
  // Pinned memory only pays when pixels go to a GPU.
  const PixelAllocator& base =
      gpus > 0 && !chain.empty() && options.allocator ? *options.allocator : default_allocator();

  const int lanes = static_cast<int>(gpu_workers.size());
  const std::size_t budget =
      options.max_inflight_bytes ? options.max_inflight_bytes : batch::default_inflight_bytes(gpus, lanes);
  batch::give_large_buffers_back();
  BatchRun run(options, std::move(plan), chain, devices, budget, base, source, std::move(gpu_workers));
  BatchReport report = run.run();
  report.input_dir = options.input_dir;
  report.output_dir = options.output_dir;
  report.filters = options.filters;
  report.device_note = std::move(selection.note);
  report.codec = to_string(options.codec);
  report.gpu_codec_lanes = lanes;
  report.codec_note = std::move(codec_note);
  return report;
}

}  // namespace

BatchReport run_batch(const BatchOptions& options, BatchPlan plan, BatchWorkSource* source) {
  DeviceSelection selection = batch_devices(options, plan);
  std::string note;
  auto workers = gpu_codec_workers(options, plan, selection.devices, &note);
  return run_on(options, std::move(plan), source, std::move(selection), std::move(workers), std::move(note));
}

BatchReport run_batch(const BatchOptions& options) {
  // One walk of IN_DIR tells the start-up choice how much work there is and becomes the plan; a bad
  // --devices or --codec gpu without a GPU codec fails before OUT_DIR is touched.
  BatchPlan plan = walk_batch(options);
  DeviceSelection selection = batch_devices(options, plan);
  std::string note;
  auto workers = gpu_codec_workers(options, plan, selection.devices, &note);
  set_up_output(options, plan);
  return run_on(options, std::move(plan), nullptr, std::move(selection), std::move(workers), std::move(note));
}

}  // namespace tf
