// One report from the reports of the ranks that shared a batch (MPI): every file from the rank that
// did it, the devices of every rank side by side ("r1:gpu0"), totals summed, a summary per rank.
#include <algorithm>

#include <fmt/format.h>

#include "tilefilter/batch/batch.hpp"

namespace tf {

BatchReport merge_batch_reports(std::vector<BatchReport> per_rank, const std::vector<std::string>& hosts,
                                double wall_s) {
  using Status = FileResult::Status;
  BatchReport out;
  if (per_rank.empty()) return out;
  BatchReport& first = per_rank.front();
  out.input_dir = first.input_dir;
  out.output_dir = first.output_dir;
  out.filters = first.filters;
  out.skipped = std::move(first.skipped);  // the walk is rank 0's; the others ran the same plan
  out.notes = std::move(first.notes);
  out.device_note = first.device_note;
  out.codec = first.codec;
  out.codec_note = first.codec_note;
  out.files = first.files;
  out.wall_s = wall_s;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    const BatchReport& part = per_rank[r];
    const int rank = static_cast<int>(r);
    auto ranked = [rank](const std::string& id) { return fmt::format("r{}:{}", rank, id); };  // "r1:gpu0"
    BatchRankSummary sum;
    sum.rank = rank;
    sum.host = r < hosts.size() ? hosts[r] : std::string();
    sum.wall_s = part.wall_s;
    sum.decode_threads = part.decode_threads;
    sum.encode_threads = part.encode_threads;
    sum.device_note = part.device_note;
    for (std::size_t i = 0; i < part.files.size() && i < out.files.size(); ++i) {
      const FileResult& f = part.files[i];
      if (f.rank != rank) continue;  // another rank's file, or one nobody took
      out.files[i] = f;
      switch (f.status) {
        case Status::Ok:
          ++sum.files_ok;
          sum.megapixels += static_cast<double>(f.width) * f.height / 1e6;
          break;
        case Status::Failed: ++sum.files_failed; break;
        case Status::Resumed: ++sum.files_resumed; break;
        case Status::Cancelled: ++sum.files_cancelled; break;
      }
    }
    for (const DeviceSummary& d : part.devices) {
      const bool fallback = d.name == "cpu-fallback";
      if (fallback && d.tiles == 0) continue;
      DeviceSummary merged = d;
      merged.name = ranked(d.name);
      merged.device = static_cast<int>(out.devices.size());
      out.device_names.push_back(merged.name);
      out.images_per_device.push_back(d.device >= 0 && d.device < static_cast<int>(part.images_per_device.size())
                                          ? part.images_per_device[d.device]
                                          : 0);
      sum.devices.push_back(merged.name);
      out.devices.push_back(std::move(merged));
    }
    out.decode_s += part.decode_s;
    out.encode_s += part.encode_s;
    out.decode_cpu_s += part.decode_cpu_s;
    out.encode_cpu_s += part.encode_cpu_s;
    out.megapixels += part.megapixels;
    out.decode_threads += part.decode_threads;
    out.gpu_codec_lanes += part.gpu_codec_lanes;
    out.gpu_codec_batch = std::max(out.gpu_codec_batch, part.gpu_codec_batch);
    for (GpuCodecWorkerSummary w : part.codec_workers) {
      w.device = ranked(w.device);
      out.codec_workers.push_back(std::move(w));
    }
    out.encode_threads += part.encode_threads;
    out.max_inflight_bytes += part.max_inflight_bytes;
    out.peak_inflight_bytes += part.peak_inflight_bytes;
    out.memory_wait_s += part.memory_wait_s;
    out.cancelled = out.cancelled || part.cancelled;
    out.ranks.push_back(std::move(sum));
  }
  return out;
}

}  // namespace tf
