// The batch report: counts, the exit code, and the JSON written by --report.
#include <nlohmann/json.hpp>

#include "tilefilter/batch/batch.hpp"
#include "tilefilter/engine/startup.hpp"

namespace tf {

const char* to_string(FileResult::Status s) {
  switch (s) {
    case FileResult::Status::Ok: return "ok";
    case FileResult::Status::Failed: return "failed";
    case FileResult::Status::Resumed: return "resumed";
    case FileResult::Status::Cancelled: return "cancelled";
  }
  return "?";
}

int BatchReport::count(FileResult::Status s) const {
  int n = 0;
  for (const auto& f : files) n += f.status == s;
  return n;
}

int BatchReport::failed() const { return count(FileResult::Status::Failed); }

// Decode threads that wait for room while the GPU codec workers, fed whole batches, are busy all the time
// wait behind the GPUs: a larger budget would not help (10 000 photos on four H200s: 241 s of waiting,
// summed over 64 threads, in a 5.5-s run whose workers took 32 files a call and were never starved).
bool BatchReport::memory_bound() const {
  if (memory_wait_s <= 0.1 * wall_s) return false;
  const GpuCodecPace gpus = gpu_codec_pace(*this);
  return 2LL * gpus.files < static_cast<long long>(files.size()) || !gpus.set_the_pace;
}

int BatchReport::exit_code() const {
  const int done = count(FileResult::Status::Ok) + count(FileResult::Status::Resumed);
  if (done == 0) return 1;                              // nothing could be done (or no image at all)
  if (done < static_cast<int>(files.size())) return 3;  // some failed or were not done
  return 0;
}

namespace {
// Where JPEGs were decoded and encoded: as asked, the GPU codec workers, and how many files each did.
nlohmann::ordered_json codec_summary(const BatchReport& r) {
  const GpuCodecCounts n = gpu_codec_counts(r);
  nlohmann::ordered_json j{{"asked", r.codec},
                           {"gpu_workers", r.gpu_codec_lanes},
                           {"gpu_batch", r.gpu_codec_batch},
                           {"files_decoded_on_gpu", n.decoded},
                           {"files_encoded_on_gpu", n.encoded},
                           {"files_sent_to_cpu", n.sent_to_cpu}};
  if (!r.codec_note.empty()) j["note"] = r.codec_note;
  for (const GpuCodecWorkerSummary& w : r.codec_workers) {
    nlohmann::ordered_json one{{"device", w.device}, {"ready_s", w.ready_s}, {"calls", w.calls},
                               {"files", w.files},   {"busy_s", w.busy_s},   {"starved_s", w.starved_s}};
    const GpuJpegSteps& s = w.steps;
    one["steps"] = {{"parse_s", s.parse_s}, {"hw_decode_s", s.hw_decode_s}, {"cuda_decode_s", s.cuda_decode_s},
                    {"queue_s", s.queue_s}, {"wait_s", s.wait_s},           {"retrieve_s", s.retrieve_s}};
    j["workers"].push_back(std::move(one));
  }
  return j;
}

// Decode or encode totals; per_core is megapixels per CPU-second of the codec threads.
nlohmann::ordered_json codec_totals(int threads, double thread_s, double cpu_s, double megapixels) {
  return {{"threads", threads},
          {"thread_s", thread_s},
          {"cpu_s", cpu_s},
          {"megapixels", megapixels},
          {"megapixels_per_s_per_core", cpu_s > 0 ? megapixels / cpu_s : 0.0}};
}

// The process's start-up steps (driver, contexts, codec lanes, first file) in seconds since the
// process started, and when the report was made: the part of a whole-process time before the work.
nlohmann::ordered_json startup_json() {
  auto steps = nlohmann::ordered_json::array();
  for (const auto& s : startup_steps()) steps.push_back({{"what", s.what}, {"start_s", s.t0}, {"end_s", s.t1}});
  return nlohmann::ordered_json{{"process_s", process_seconds()}, {"steps", std::move(steps)}};
}

}  // namespace

std::string batch_report_json(const BatchReport& r) {
  using json = nlohmann::ordered_json;
  json files = json::array();
  for (const auto& f : r.files) {
    json j = {{"input", f.input},
              {"output", f.output},
              {"status", to_string(f.status)},
              {"width", f.width},
              {"height", f.height},
              {"format", f.format},
              {"input_bytes", f.input_bytes},
              {"output_bytes", f.output_bytes},
              {"decode_s", f.decode_s},
              {"filter_s", f.filter_s},
              {"encode_s", f.encode_s},
              {"decode_cpu_s", f.decode_cpu_s},
              {"encode_cpu_s", f.encode_cpu_s},
              {"decoder", f.decoder},
              {"encoder", f.encoder},
              {"device", f.device},
              {"tiles", f.tiles},
              {"retried_tiles", f.retried_tiles}};
    if (!f.reason.empty()) j["reason"] = f.reason;
    if (!f.codec_note.empty()) j["codec_note"] = f.codec_note;
    if (!f.write_note.empty()) j["write_note"] = f.write_note;
    if (!r.ranks.empty()) j["rank"] = f.rank;
    files.push_back(std::move(j));
  }
  json devices = json::array();
  for (const auto& d : r.devices) {
    const bool fallback = d.name.ends_with("cpu-fallback");  // "cpu-fallback", or "r1:cpu-fallback" (MPI)
    const int images =
        d.device >= 0 && d.device < static_cast<int>(r.images_per_device.size()) ? r.images_per_device[d.device] : 0;
    if (fallback && d.tiles == 0) continue;  // the CPU fallback only appears when it was needed
    devices.push_back({{"id", d.name},
                       {"images", images},
                       {"tiles", d.tiles},
                       {"busy_s", d.busy_s},
                       {"busy_percent", r.wall_s > 0 ? 100.0 * d.busy_s / r.wall_s : 0.0},
                       {"idle_s", d.idle_s},
                       {"upload_s", d.upload_s},
                       {"kernel_s", d.kernel_s},
                       {"download_s", d.download_s},
                       {"compute_s", d.compute_s},
                       {"bytes_up", d.bytes_up},
                       {"bytes_down", d.bytes_down},
                       {"mean_utilization", d.mean_utilization >= 0 ? json(d.mean_utilization) : json(nullptr)}});
  }
  double decoded_mpix = 0, encoded_mpix = 0;
  for (const auto& f : r.files) {
    const double mpix = static_cast<double>(f.width) * f.height / 1e6;
    if (f.decode_s > 0) decoded_mpix += mpix;
    if (f.encode_s > 0) encoded_mpix += mpix;
  }
  json out = {
      {"tool", "tilefilter batch"},
      {"input_dir", r.input_dir},
      {"output_dir", r.output_dir},
      {"filters", r.filters},
      {"exit_code", r.exit_code()},
      {"cancelled", r.cancelled},
      {"wall_s", r.wall_s},
      {"megapixels", r.megapixels},
      {"megapixels_per_s", r.wall_s > 0 ? r.megapixels / r.wall_s : 0.0},
      {"images_per_s", r.wall_s > 0 ? r.count(FileResult::Status::Ok) / r.wall_s : 0.0},
      {"counts",
       {{"files", r.files.size()},
        {"ok", r.count(FileResult::Status::Ok)},
        {"failed", r.count(FileResult::Status::Failed)},
        {"resumed", r.count(FileResult::Status::Resumed)},
        {"cancelled", r.count(FileResult::Status::Cancelled)},
        {"skipped", r.skipped.size()}}},
      {"decode", codec_totals(r.decode_threads, r.decode_s, r.decode_cpu_s, decoded_mpix)},
      {"encode", codec_totals(r.encode_threads, r.encode_s, r.encode_cpu_s, encoded_mpix)},
      {"codec", codec_summary(r)},
      {"max_inflight_bytes", r.max_inflight_bytes},
      {"peak_inflight_bytes", r.peak_inflight_bytes},
      {"memory_wait_s", r.memory_wait_s},
      {"memory_bound", r.memory_bound()},
      {"device_note", r.device_note},
      {"notes", r.notes},
      {"startup", startup_json()},
      {"devices", std::move(devices)},
      {"files", std::move(files)},
      {"skipped", r.skipped},
  };
  if (!r.ranks.empty()) {
    json ranks = json::array();
    for (const auto& k : r.ranks)
      ranks.push_back({{"rank", k.rank},
                       {"host", k.host},
                       {"wall_s", k.wall_s},
                       {"ok", k.files_ok},
                       {"failed", k.files_failed},
                       {"resumed", k.files_resumed},
                       {"cancelled", k.files_cancelled},
                       {"megapixels", k.megapixels},
                       {"decode_threads", k.decode_threads},
                       {"encode_threads", k.encode_threads},
                       {"device_note", k.device_note},
                       {"devices", k.devices}});
    out["ranks"] = std::move(ranks);
  }
  return out.dump(2) + "\n";
}

bool is_gpu_codec(const std::string& codec) { return codec.starts_with("nvjpeg"); }

GpuCodecCounts gpu_codec_counts(const BatchReport& report) {
  GpuCodecCounts n;
  for (const auto& f : report.files) {
    if (f.status != FileResult::Status::Ok) continue;
    n.decoded += is_gpu_codec(f.decoder);
    n.encoded += is_gpu_codec(f.encoder);
    n.sent_to_cpu += !f.codec_note.empty();
  }
  return n;
}

GpuCodecPace gpu_codec_pace(const BatchReport& report) {
  GpuCodecPace p;
  double busy = 0, starved = 0;
  for (const GpuCodecWorkerSummary& w : report.codec_workers) {
    p.files += w.files;
    p.calls += w.calls;
    busy += w.busy_s;
    starved += w.starved_s;
  }
  if (busy + starved > 0) p.busy_share = busy / (busy + starved);
  p.set_the_pace = p.calls > 0 && report.gpu_codec_batch > 0 && p.busy_share >= 0.9 &&
                   p.files >= 0.9 * report.gpu_codec_batch * static_cast<double>(p.calls);
  return p;
}

}  // namespace tf
