// The GPU codecs' stage of BatchRun (batch_run.hpp): a few workers per GPU, each decodes, filters and encodes
// whole JPEGs in batches; a file they cannot take is decoded on the CPU and filtered on that GPU.
#include <algorithm>

#include <fmt/format.h>

#include "batch_run.hpp"

namespace tf::batch_detail {

void BatchRun::gpu_loop(std::size_t g) {
  GpuCodecWorker& worker = gpu_workers_[g];
  const int d = worker.device;
  const int lane_no = static_cast<int>(g);
  const std::size_t most = static_cast<std::size_t>(gpu_batch());
  std::vector<Work> batch;
  std::vector<PixelAllocator> allocs;
  std::vector<GpuJpegJob> jobs;
  batch.reserve(most);  // the allocators below refer to the batch's charges: no reallocation
  while (auto first = to_gpu_.pop()) {
    batch.clear();
    batch.push_back(std::move(*first));
    while (batch.size() < most)  // what is queued now joins the call; nobody waits for more
      if (auto more = to_gpu_.try_pop()) batch.push_back(std::move(*more));
      else break;
    allocs.clear();
    jobs.clear();
    for (Work& w : batch) {
      const int i = w.index;
      started(i);
      allocs.push_back(budget_allocator(w.charge, 1));
      GpuJpegJob job;
      job.jpeg = w.bytes;
      job.name = plan_.items[i].input;
      job.chain = &chain_;
      job.border = opt_.job.border;
      job.encode = is_jpeg_path(plan_.items[i].output);
      job.quality = opt_.quality;
      jobs.push_back(std::move(job));
    }
    for (std::size_t k = 0; k < jobs.size(); ++k) jobs[k].allocator = &allocs[k];
    if (aborting()) {
      for (Work& w : batch) discard(w.index);
      continue;
    }
    const double t0 = tel_.now();
    std::vector<GpuJpegOutcome> outcomes = worker.lane->run_batch(jobs);
    const double t_end = tel_.now();
    for (std::size_t k = 0; k < batch.size(); ++k)
      finish_gpu_file(std::move(batch[k]), std::move(outcomes.at(k)), jobs[k].encode, d, lane_no, t0, t_end);
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
  tel_.add({d, lane_no, StageKind::Decode, i, std::max(t0, t1 - out.decode_s), t1, w.bytes.size()});
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
  w.bytes.clear();
  w.bytes.shrink_to_fit();
  if (encoded) {
    try {
      w.bytes = jpeg_with_metadata(out.jpeg, opt_.strip ? Metadata{} : w.info.metadata);
    } catch (const std::exception& e) {
      return fail(i, fmt::format("{}: {}", item.output, e.what()));
    }
    w.encoded = true;
  } else if (chain_.empty()) {
    w.src = std::move(out.pixels);
  } else {
    w.dst = std::move(out.pixels);
  }
  waiting(i);
  to_encode_.push(std::move(w));
}

// A file the GPU codec could not take: decoded here on the CPU and filtered on this worker's GPU
// through the Device path.
void BatchRun::on_cpu_after_gpu(Work w, int d) {
  const int i = w.index;
  w.bytes = {};
  w.charge = Charge();
  if (!decode_on_cpu(i, 0, w)) return;
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
