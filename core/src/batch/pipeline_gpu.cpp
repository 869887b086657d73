// The GPU codecs' stage of BatchRun (batch_run.hpp): a few workers per GPU, each decodes, filters and encodes
// whole JPEGs in batches; a file they cannot take is decoded on the CPU and filtered on that GPU.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "batch_run.hpp"
#include "tilefilter/engine/startup.hpp"

namespace tf::batch_detail {

void BatchRun::gpu_loop(std::size_t g) {
  GpuCodecWorker& worker = gpu_workers_[g];
  if (!worker.lane && !wait_for_lane(g)) return;
  // With --codec auto the pool then gives back what the CPU decodes of the start-up left in it: their budget
  // goes to the files queued for the GPUs from now on, and the pool's free buffers would come on top of it
  // (peak RSS, 2000 photos on 4xH100 with a 512 MiB budget: 1.99-2.04 GiB by default, 1.40-1.42 GiB with
  // --codec gpu). It keeps an eighth of the budget (on one GPU's 1 GiB, a 12-MP photo and its result).
  if (gpu_lanes_ready_.fetch_add(1) == 0 && opt_.codec == CodecChoice::Auto) pool_.keep_at_most(budget_.cap() / 8);
  GpuCodecWorkerSummary& summary = worker_summaries_[g];
  summary.ready_s = tel_.now() - start_s_;
  feed_lane(g);
  summary.steps = worker.lane->steps();  // the lane's own sums over all its calls
  if (keeping_gpu_resources_until_exit()) keep_until_exit(std::shared_ptr<GpuJpegLane>(std::move(worker.lane)));
}

// Waits for worker g's lane, made on a thread of its own; false when it did not come (its files were then
// handed to the CPU codecs).
bool BatchRun::wait_for_lane(std::size_t g) {
  GpuCodecWorker& worker = gpu_workers_[g];
  const int d = worker.device;
  // Made on a thread of its own, so that every GPU's lanes come up at once while the decode
  // threads hand the CPU codecs what the GPU queue cannot hold yet (--codec auto), and so that a
  // batch the CPU codecs finish first does not wait for a lane (nvJPEG's handles and states took
  // 2-5 s on four H100s): once the decoders are done, this worker hands what is queued for it to
  // the CPU codecs and the lane, when it comes, is simply dropped.
  struct Slot {
    std::mutex mutex;
    std::condition_variable ready;
    std::unique_ptr<GpuJpegLane> lane;
    std::string why;
    bool done = false;
  };
  auto slot = std::make_shared<Slot>();
  if (keeping_gpu_resources_until_exit()) keep_until_exit(slot);  // a lane that comes late is not torn down
  const int delay_ms = opt_.job.faults.codec_lane_delay_ms;
  // nvJPEG makes its handles and states one at a time in a process: every GPU's first lane is made
  // before any GPU's second, so the last GPU joins as soon as it can.
  const bool first_of_gpu = first_of_its_gpu(g);
  std::thread([slot, delay_ms, first_of_gpu, gate = first_lanes_, device = devices_[d],
               label = fmt::format("{} codec lane {}", devices_[d]->info().id, g)] {
    if (delay_ms < 0) return;  // injected: never ready
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    if (!first_of_gpu) {
      std::unique_lock lock(gate->mutex);
      gate->done.wait_for(lock, std::chrono::seconds(10), [&] { return gate->pending <= 0; });
    }
    // The first lanes are made one GPU at a time, each GPU's handles with its lane's states. nvJPEG
    // makes them one at a time across the machine anyway (tf_nvjpeg_startup on 4xH200: four threads or
    // four processes take as long as one thread doing the four GPUs in turn), so taking turns only
    // chooses the order: the first GPU decodes about 1 s sooner, the last no later. 2000 photos on
    // 4xH100 (2026-11-27): lanes ready 1.80-2.79 s instead of 2.76-3.17 s, 3.51-3.98 s in-process
    // instead of 4.13-4.54 s.
    static std::mutex in_turn;
    std::unique_lock turn(in_turn, std::defer_lock);
    if (first_of_gpu) turn.lock();
    StartupTimer timer(label);
    std::string why;
    auto lane = make_gpu_jpeg_lane(*device, &why);
    timer.done();
    if (turn.owns_lock()) turn.unlock();
    if (first_of_gpu) {
      std::lock_guard lock(gate->mutex);
      --gate->pending;
      gate->done.notify_all();
    }
    std::lock_guard lock(slot->mutex);
    slot->lane = std::move(lane);
    slot->why = std::move(why);
    slot->done = true;
    slot->ready.notify_all();
  }).detach();
  std::string why = "it was not ready before the decoders were done";
  {
    // --codec gpu waits for its lanes (a lane that fails hands its files on); auto gives up on a lane
    // not ready when the decoders are done, since the CPU codecs can take what is queued.
    const bool wait_for_lane = opt_.codec == CodecChoice::Gpu;
    std::unique_lock lock(slot->mutex);
    while (!slot->done && (wait_for_lane || !gpu_queue_closed_.load()))
      slot->ready.wait_for(lock, std::chrono::milliseconds(5));
    if (slot->done && slot->lane) worker.lane = std::move(slot->lane);
    else if (slot->done) why = fmt::format("it did not start ({})", slot->why);
  }
  if (worker.lane) return true;
  while (auto w = to_gpu_.pop()) {
    results_[w->index].codec_note = fmt::format("GPU codec lane {}: {}: decoded on the CPU", g, why);
    on_cpu_after_gpu(std::move(*w), worker.device);
  }
  return false;
}

// Worker g's files through its lane until the queue closes, each batch in two halves
// (GpuJpegLane::begin_batch, end_batch): this thread takes the files and decodes a batch while `ender`
// filters, encodes and hands on the one before, so the host's side of nvJPEG's calls runs on two cores.
void BatchRun::feed_lane(std::size_t g) {
  GpuCodecWorker& worker = gpu_workers_[g];
  const int d = worker.device;
  const int lane_no = static_cast<int>(g);
  GpuCodecWorkerSummary& summary = worker_summaries_[g];
  struct Begun {
    std::vector<Work> batch;
    std::vector<GpuJpegJob> jobs;
    std::unique_ptr<GpuJpegPending> pending;
    double t0 = 0;
  };
  std::mutex handoff_mutex;
  std::condition_variable handoff_changed;
  std::optional<Begun> handoff;
  bool no_more = false;
  // The worker is busy while either half runs; the rest of its time since its lane was ready it starved.
  struct Busy {
    std::mutex mutex;
    int running = 0;
    double since = 0, total = 0;
    void enter(double now) {
      std::lock_guard lock(mutex);
      if (running++ == 0) since = now;
    }
    void leave(double now) {
      std::lock_guard lock(mutex);
      if (--running == 0) total += now - since;
    }
  } busy;
  std::thread ender([&] {
    for (;;) {
      Begun b;
      {
        std::unique_lock lock(handoff_mutex);
        handoff_changed.wait(lock, [&] { return handoff.has_value() || no_more; });
        if (!handoff) return;
        b = std::move(*handoff);
        handoff.reset();
      }
      handoff_changed.notify_all();
      busy.enter(tel_.now());
      std::vector<GpuJpegOutcome> outcomes = worker.lane->end_batch(std::move(b.pending));
      const double t_end = tel_.now();
      busy.leave(t_end);
      for (std::size_t k = 0; k < b.batch.size(); ++k)
        finish_gpu_file(std::move(b.batch[k]), std::move(outcomes.at(k)), b.jobs[k].encode, d, lane_no, b.t0, t_end);
    }
  });
  const std::size_t most = static_cast<std::size_t>(gpu_batch());
  while (auto first = to_gpu_.pop()) {
    Begun b;
    b.batch.push_back(std::move(*first));
    while (b.batch.size() < most)  // what is queued now joins the call; nobody waits for more
      if (auto more = to_gpu_.try_pop()) b.batch.push_back(std::move(*more));
      else break;
    b.jobs = gpu_jobs(b.batch);
    if (aborting()) {
      for (Work& w : b.batch) discard(w.index);
      continue;
    }
    b.t0 = tel_.now();
    busy.enter(b.t0);
    b.pending = worker.lane->begin_batch(b.jobs);
    if (worker.lane->done_with_bytes_at_begin()) give_back_bytes(b.batch, b.jobs);
    busy.leave(tel_.now());
    ++summary.calls;
    summary.files += static_cast<int>(b.batch.size());
    {
      std::unique_lock lock(handoff_mutex);
      handoff_changed.wait(lock, [&] { return !handoff.has_value(); });
      handoff = std::move(b);
    }
    handoff_changed.notify_all();
  }
  {
    std::lock_guard lock(handoff_mutex);
    no_more = true;
  }
  handoff_changed.notify_all();
  ender.join();
  summary.busy_s = busy.total;
  summary.starved_s = std::max(0.0, tel_.now() - start_s_ - summary.ready_s - busy.total);
}

// The lane's jobs for a batch of files (each started now): their bytes, the chain, and the input's JPEG
// coding unless the user chose.
std::vector<GpuJpegJob> BatchRun::gpu_jobs(std::vector<Work>& batch) {
  std::vector<GpuJpegJob> jobs;
  for (Work& w : batch) {
    const int i = w.index;
    started(i);
    GpuJpegJob job;
    job.jpeg = w.bytes;
    job.name = plan_.items[i].input;
    job.chain = &chain_;
    job.border = opt_.job.border;
    job.encode = is_jpeg_path(plan_.items[i].output);
    WriteOptions coding;  // the input's quality and subsampling, unless the user chose
    coding.quality = opt_.quality;
    coding.subsampling = opt_.subsampling;
    keep_input_coding(coding, w.info.jpeg);
    job.quality = jpeg_quality(coding);
    job.subsampling = coding.subsampling;
    jobs.push_back(std::move(job));
  }
  // Pixels that come back are covered by the charge each file took when it was queued (its result when
  // that is larger than its bytes): charging them again could wait for ever, the budget full of the
  // charges of this batch's own files and of those queued behind it.
  for (GpuJpegJob& job : jobs) {
    job.allocator = &pool_.allocator();
    job.stream_buffer = bytes_.source();
  }
  return jobs;
}

// Once the lane has read a batch's bytes, they go back to the pool for the files read next, and the files
// that come back as JPEG streams give their budget back too: until their streams arrive (charged then,
// finish_gpu_file) they are on the GPU, not here. A file whose pixels come back keeps its charge for them.
// Holding the bytes' budget for each lane's two batches in flight, four GPUs' lanes within the 512 MiB that
// four GPUs leave took 18-24 files a call instead of 32 (4xH200, 2026-11-28: 2000 photos on four GPUs
// 2.44-2.47 s in-process against 2.53-2.62 s, 10 000 with no flags 5.49-6.02 s against 6.40-6.43 s).
void BatchRun::give_back_bytes(std::vector<Work>& batch, std::vector<GpuJpegJob>& jobs) {
  for (std::size_t k = 0; k < batch.size(); ++k) {
    jobs[k].jpeg = {};
    bytes_.give(std::move(batch[k].bytes));
    if (jobs[k].encode) batch[k].charge = Charge();
  }
}

void BatchRun::finish_gpu_file(Work w, GpuJpegOutcome outcome, bool encoded, int d, int lane_no, double t0,
                               double t_end) {
  const int i = w.index;
  const BatchItem& item = plan_.items[i];
  FileResult& r = results_[i];
  if (!outcome.error.empty()) {
    if (outcome.kind == ErrorKind::Cancelled) return discard(i);
    r.codec_note = fmt::format("GPU codec: {}; decoded on the CPU", outcome.error);
    return on_cpu_after_gpu(std::move(w), d);
  }
  GpuJpegResult& out = outcome.result;
  const double t1 = std::max(t0, t_end - out.encode_s - out.filter_s), t2 = t1 + out.filter_s;
  tel_.add({d, lane_no, StageKind::Decode, i, std::max(t0, t1 - out.decode_s), t1, item.input_bytes});
  if (!chain_.empty()) tel_.add({d, lane_no, StageKind::Kernel, i, t1, t2, 0});
  tel_.add({d, lane_no, StageKind::Encode, i, t2, std::max(t2, t_end), out.jpeg.size()});
  r.decode_s = out.decode_s;
  r.filter_s = out.filter_s;
  r.encode_s = out.encode_s;
  r.decoder = out.decoder;
  r.encoder = out.encoder.empty() ? encoder_for(item.output, out.format) : out.encoder;
  r.tiles = 1;
  {
    std::lock_guard lock(progress_mutex_);
    ++images_per_device_[d];
    r.device = devices_[d]->info().id;
  }
  bytes_.give(std::move(w.bytes));
  if (encoded) {
    w.bytes = std::move(out.jpeg);  // the writer adds the metadata
    w.encoded = true;
    // A file that gave its budget back at its batch's start (give_back_bytes) is charged for its stream now,
    // without waiting: the budget may be full of files queued for this very lane. It is exceeded by at most
    // a batch's streams a lane (10 000 photos on four GPUs: 625-632 MiB at the peak against 512).
    if (w.charge.held() == 0) {
      budget_.take(w.bytes.size());
      w.charge = Charge(&budget_, w.bytes.size());
    }
  } else if (chain_.empty()) {
    w.src = std::move(out.pixels);
  } else {
    w.dst = std::move(out.pixels);
  }
  waiting(i);
  to_encode_.push(std::move(w));
}

// A file the GPU codec could not take: decoded here on the CPU and filtered on this worker's GPU
// through the Device path. The decode does not wait for room in the budget: the files queued for the
// GPU codecs may hold it, and only the workers take them (a worker waiting so, with pixel-sized
// charges queued or every worker on such a file, waited for ever). So the budget may be exceeded by
// one image and its result a worker.
void BatchRun::on_cpu_after_gpu(Work w, int d) {
  const int i = w.index;
  bytes_.give(std::move(w.bytes));
  w.charge = Charge();
  if (!decode_on_cpu(i, 0, w, /*wait=*/false)) return;
  if (chain_.empty()) {
    waiting(i);
    to_encode_.push(std::move(w));
    return;
  }
  const double t0 = tel_.now();
  JobReport rep;
  if (!filter_file(w, {devices_[d]}, rep)) return;
  record(i, rep, false, d, t0);
  send_to_encoder(std::move(w));
}

}  // namespace tf::batch_detail

namespace tf::batch {

std::string late_gpus_note(const std::vector<GpuCodecWorkerSummary>& workers, double wall_s) {
  struct Gpu {
    std::string name;
    double ready_s = -1;  // its first worker's; -1: none was ready
    int files = 0;
  };
  std::vector<Gpu> gpus;
  for (const auto& w : workers) {
    auto it = std::find_if(gpus.begin(), gpus.end(), [&](const Gpu& g) { return g.name == w.device; });
    if (it == gpus.end()) it = gpus.insert(gpus.end(), Gpu{w.device});
    if (w.ready_s >= 0) it->ready_s = it->ready_s < 0 ? w.ready_s : std::min(it->ready_s, w.ready_s);
    it->files += w.files;
  }
  int total = 0;
  for (const auto& g : gpus) total += g.files;
  const auto n = static_cast<long long>(gpus.size());
  if (n < 2 || total < 64) return "";
  std::vector<std::string> late, kept;
  for (const auto& g : gpus) {
    if (2LL * n * g.files >= total) {
      kept.push_back(g.name.starts_with("gpu") ? g.name.substr(3) : std::string());
      continue;
    }
    late.push_back(g.ready_s >= 0
                       ? fmt::format("{} was ready {:.2f} s in and took {} files", g.name, g.ready_s, g.files)
                       : fmt::format("{} was never ready", g.name));
  }
  if (late.empty() || kept.empty()) return "";
  const bool plain = std::none_of(kept.begin(), kept.end(), [](const std::string& k) { return k.empty(); });
  return fmt::format(
      "{} (of the {} files the GPU codecs took in this {:.2f}-s batch): nvJPEG starts on one GPU after another, "
      "and each GPU adds its start-up and teardown to the process, so a batch this short may end sooner on fewer "
      "GPUs{}",
      fmt::join(late, "; "), total, wall_s, plain ? fmt::format(" (--devices {})", fmt::join(kept, ",")) : "");
}

}  // namespace tf::batch
