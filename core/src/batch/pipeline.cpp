// The batch pipeline: decode threads -> one filter worker per device -> encode threads. Memory is
// bounded by a byte budget taken when a file's pixels are allocated (its source and, when a filter
// follows, its result), so decoders wait while the devices or the encoders are behind.
#include <algorithm>
#include <array>
#include <ctime>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "../io/codec_checks.hpp"
#include "../io/format_whole.hpp"
#include "batch_internal.hpp"
#include "tilefilter/util/error.hpp"

namespace fs = std::filesystem;

namespace tf {

namespace {

using batch::BoundedQueue;
using batch::BufferPool;
using batch::Charge;
using batch::MemoryBudget;
using Status = FileResult::Status;

// Images this large are split across every device; smaller ones go whole to one device, several at
// once (tiles only add overhead there).
constexpr long long kAutoSplitPixels = 64LL << 20;
// At the end of a batch, when nothing else is coming, images from this size up are split too so
// that the other devices do not idle.
constexpr long long kTailSplitPixels = 4LL << 20;

double thread_cpu_s() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

bool debug_log() {
  static const bool on = std::getenv("TILEFILTER_DEBUG") != nullptr;
  return on;
}

struct Work {
  int index = -1;
  Image src, dst;
  ImageInfo info;  // metadata and stored channels, carried to the output
  Charge charge;   // budget for src and dst, or for the bytes
  // The GPU codec's path: the file's compressed bytes on the way in, and the output's JPEG stream
  // (metadata included) on the way out when `encoded`.
  std::vector<unsigned char> bytes;
  bool encoded = false;
};

bool is_jpeg_path(const std::string& path) {
  const std::string ext = extension_of(path);
  return ext == ".jpg" || ext == ".jpeg";
}

constexpr std::array<unsigned char, 2> kEoi = {0xFF, 0xD9};

// Why the GPU codec cannot take a stream with this header ("" when it can).
std::string gpu_codec_refuses(const JpegStreamInfo& h) {
  if (h.progressive) return "progressive JPEG";
  if (h.precision != 8) return fmt::format("{}-bit JPEG", h.precision);
  if (h.cmyk) return "CMYK JPEG";
  if (h.components != 1 && h.components != 3) return fmt::format("JPEG of {} components", h.components);
  return {};
}

// A place held in the GPU codecs' queue (BoundedQueue::reserve), given back unless used.
class GpuPlace {
 public:
  GpuPlace() = default;
  GpuPlace(const GpuPlace&) = delete;
  GpuPlace& operator=(const GpuPlace&) = delete;
  ~GpuPlace() { give_back(); }
  void take(BoundedQueue<Work>& q) {
    q.reserve();
    queue_ = &q;
  }
  bool held() const { return queue_ != nullptr; }
  void push(Work&& w) {
    queue_->push_reserved(std::move(w));
    queue_ = nullptr;
  }
  void give_back() {
    if (queue_) queue_->unreserve();
    queue_ = nullptr;
  }

 private:
  BoundedQueue<Work>* queue_ = nullptr;
};

// One GPU codec worker: its lane and the index of its GPU among the batch's devices.
struct GpuCodecWorker {
  std::unique_ptr<GpuJpegLane> lane;
  int device = 0;
};

class BatchRun {
 public:
  BatchRun(const BatchOptions& opt, BatchPlan plan, Chain chain, std::vector<DevicePtr> devices, std::size_t budget,
           const PixelAllocator& base, BatchWorkSource* source, std::vector<GpuCodecWorker> gpu_workers)
      : opt_(opt),
        source_(source),
        plan_(std::move(plan)),
        chain_(std::move(chain)),
        devices_(std::move(devices)),
        budget_(budget),
        pool_(base, budget + budget / 4),
        to_filter_(2 * devices_.size() + 2),
        to_encode_(static_cast<std::size_t>(encode_threads()) + 2),
        gpu_workers_(std::move(gpu_workers)),
        to_gpu_(gpu_workers_.size() * static_cast<std::size_t>(gpu_batch()) + 1),
        out_root_(fs::weakly_canonical(fs::absolute(opt.output_dir)).string()) {
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
    utilization_.assign(devices_.size(), {0.0, 0});
  }

  BatchReport run() {
    const double t_start = tel_.now();
    std::vector<std::thread> decoders, filters, encoders;
    for (int e = 0; e < encode_threads(); ++e) encoders.emplace_back([this, e] { encode_loop(e); });
    if (!chain_.empty())
      for (int d = 0; d < static_cast<int>(devices_.size()); ++d) filters.emplace_back([this, d] { filter_loop(d); });
    std::vector<std::thread> gpu_codecs;
    for (std::size_t g = 0; g < gpu_workers_.size(); ++g) gpu_codecs.emplace_back([this, g] { gpu_loop(g); });
    for (int t = 0; t < decode_threads(); ++t) decoders.emplace_back([this, t] { decode_loop(t); });
    std::thread sampler([this] { sample_loop(); });

    for (auto& t : decoders) t.join();
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
    report.wall_s = tel_.now() - t_start;
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
      if (utilization_[d].second > 0)
        report.devices[d].mean_utilization = utilization_[d].first / utilization_[d].second;
    report.images_per_device = images_per_device_;
    report.decode_threads = decode_threads();
    report.encode_threads = encode_threads();
    report.max_inflight_bytes = budget_.cap();
    report.peak_inflight_bytes = budget_.peak();
    if (debug_log())
      std::fprintf(stderr, "[batch] peak in flight %.1f MiB of %.1f MiB\n", budget_.peak() / 1048576.0,
                   budget_.cap() / 1048576.0);
    return report;
  }

 private:
  int cores() const { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }
  int decode_threads() const { return opt_.decode_threads > 0 ? opt_.decode_threads : cores(); }
  int encode_threads() const { return opt_.encode_threads > 0 ? opt_.encode_threads : cores(); }
  bool aborting() const { return opt_.abort && opt_.abort->load(); }
  bool stopping() const { return (opt_.cancel && opt_.cancel->load()) || aborting(); }

  // ---- decode ----
  // With --codec gpu a decode thread takes its next file only once it holds a place in the GPU
  // codecs' queue: files are not claimed ahead of what the GPUs can take, so under MPI the other
  // ranks get them (a rank's threads would otherwise each hold a file while they wait).
  void decode_loop(int lane) {
    const int n = static_cast<int>(plan_.items.size());
    const bool hold_place = opt_.codec == CodecChoice::Gpu && !gpu_workers_.empty();
    while (!stopping()) {
      GpuPlace place;
      if (hold_place) place.take(to_gpu_);
      const int i = source_ ? source_->next() : next_++;
      if (i < 0 || i >= n) break;
      if (source_) results_[i].rank = source_->rank();
      decode_one(i, lane, place);
    }
  }

  void decode_one(int i, int lane, GpuPlace& place) {
    const BatchItem& item = plan_.items[i];
    FileResult& r = results_[i];
    if (!item.problem.empty()) return fail(i, item.problem);
    if (item.complete) {
      std::error_code ec;
      r.output_bytes = static_cast<std::size_t>(fs::file_size(item.output, ec));
      r.reason = "output already complete (--resume)";
      return finish(i, Status::Resumed);
    }
    started(i);
    bool counted = false;  // one of the CPU decodes cpu_decode_cap() allows
    if (!gpu_workers_.empty() && is_jpeg_path(item.input) && send_to_gpu(i, lane, counted, place)) return;
    place.give_back();  // not for the GPU: no place held during a CPU decode
    Work w;
    w.index = i;
    const bool decoded = decode_on_cpu(i, lane, w);
    if (counted) --cpu_decoding_;
    if (!decoded) return;
    waiting(i);
    if (chain_.empty()) to_encode_.push(std::move(w));
    else to_filter_.push(std::move(w));
  }

  // Decodes file i on this thread into w.src (budget taken for it and, with a filter, its result);
  // false when the file failed or was discarded (already reported).
  bool decode_on_cpu(int i, int lane, Work& w) {
    const BatchItem& item = plan_.items[i];
    FileResult& r = results_[i];
    w.charge = Charge(&budget_, 0);
    // The budget is taken when the decoder knows the size, before the pixels exist; with a filter
    // it covers the result image too, so later stages never wait for memory (no deadlock).
    const std::size_t factor = chain_.empty() ? 1 : 2;
    const PixelAllocator alloc = budget_allocator(w.charge, factor);
    const double t0 = tel_.now(), c0 = thread_cpu_s();
    try {
      w.src = decode_file(item.input, opt_.limits, alloc, &w.info);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Cancelled) return discard(i), false;
      return fail(i, e.what()), false;
    } catch (const std::exception& e) {
      return fail(i, fmt::format("{}: {}", item.input, e.what())), false;
    }
    const double t1 = tel_.now();
    r.decode_s = t1 - t0;
    r.decode_cpu_s = thread_cpu_s() - c0;
    r.decoder = codec_for(item.input);
    r.width = w.src.width();
    r.height = w.src.height();
    r.format = to_string(w.src.format());
    tel_.add({-1, lane, StageKind::Decode, i, t0, t1, w.src.size_bytes()});
    std::string why;
    if (!can_encode(item.output, w.src.format(), &why)) return fail(i, fmt::format("{}: {}", item.output, why)), false;
    r.encoder = encoder_for(item.output, w.src.format());
    return true;
  }

  // Pixel memory from the pool, charged to the budget (`factor` times: room for the result too).
  PixelAllocator budget_allocator(Charge& charge, std::size_t factor) {
    return {[this, &charge, factor](std::size_t bytes) -> void* {
              if (!budget_.acquire(bytes * factor, [this] { return aborting(); }))
                throw Error(ErrorKind::Cancelled, "cancelled");
              charge.add(bytes * factor);
              return pool_.allocate(bytes);
            },
            [this](void* p) { pool_.release(p); }};
  }

  // A JPEG for the GPU codecs: its bytes and header are read here, and it is queued for them
  // (with --codec auto only while they have room; otherwise this thread decodes it on the CPU).
  // False when this thread should decode it on the CPU after all.
  bool send_to_gpu(int i, int lane, bool& counted, GpuPlace& place) {
    const BatchItem& item = plan_.items[i];
    FileResult& r = results_[i];
    const double t0 = tel_.now(), c0 = thread_cpu_s();
    Work w;
    w.index = i;
    JpegStreamInfo header;
    try {
      w.bytes = read_file(item.input, opt_.limits);
      header = jpeg_stream_info(w.bytes, item.input);
    } catch (const std::exception& e) {
      r.codec_note = fmt::format("not for the GPU codec: {}", e.what());
      return false;  // the CPU decoder says what is wrong, as for any file
    }
    // A stream cut short is left to the CPU decoder, which names it (a GPU decoder may not notice).
    const bool ends = w.bytes.size() >= 4 && std::search(w.bytes.end() - std::min<std::ptrdiff_t>(64, w.bytes.size()),
                                                         w.bytes.end(), kEoi.begin(), kEoi.end()) != w.bytes.end();
    if (!ends) {
      r.codec_note = "no end-of-image marker: decoded on the CPU";
      return false;
    }
    if (std::string why = gpu_codec_refuses(header); !why.empty()) {
      r.codec_note = fmt::format("{}: decoded on the CPU", why);
      return false;
    }
    const Format format{PixelType::U8, header.gray ? 1 : 3};
    std::string why;
    if (!can_encode(item.output, format, &why)) return false;  // the CPU path reports it
    try {
      codec_checks::check_pixel_limit(item.input, header.width, header.height, opt_.limits);
    } catch (const Error&) {
      return false;  // likewise
    }
    // Budget: the bytes, and what comes back (a JPEG stream of about their size, or the pixels).
    const bool jpeg_out = is_jpeg_path(item.output);
    const std::size_t back =
        jpeg_out ? w.bytes.size() : static_cast<std::size_t>(header.width) * header.height * format.pixel_bytes();
    if (!budget_.acquire(w.bytes.size() + back, [this] { return aborting(); })) return discard(i), true;
    w.charge = Charge(&budget_, w.bytes.size() + back);
    w.info.metadata = std::move(header.metadata);
    w.info.stored_channels = format.channels;
    r.width = header.width;
    r.height = header.height;
    r.format = to_string(format);
    r.decode_cpu_s = thread_cpu_s() - c0;
    tel_.add({-1, lane, StageKind::Decode, i, t0, tel_.now(), w.bytes.size()});
    waiting(i);
    if (opt_.codec == CodecChoice::Auto) {
      if (to_gpu_.try_push(w)) return true;
      // Full: this thread decodes the file on the CPU, unless so many threads already do that
      // nobody would hand the GPU codecs their next files while those decodes run (a CPU decode
      // of a photo takes as long as the GPU codecs take to empty their queue); then it waits for room.
      if (cpu_decoding_.fetch_add(1) < cpu_decode_cap()) {
        counted = true;
        return false;  // the charge is given back as w goes out of scope
      }
      --cpu_decoding_;
    }
    if (place.held()) place.push(std::move(w));
    else to_gpu_.push(std::move(w));
    return true;
  }

  // Decode threads that may decode JPEGs on the CPU at once while GPU codecs work (--codec auto):
  // one thread per GPU codec worker stays free to feed them.
  int cpu_decode_cap() const { return std::max(1, decode_threads() - static_cast<int>(gpu_workers_.size())); }

  // ---- GPU codecs: a few workers per GPU, each decodes, filters and encodes whole files ----
  int gpu_batch() const { return opt_.gpu_codec_batch > 0 ? opt_.gpu_codec_batch : kDefaultGpuCodecBatch; }

  void gpu_loop(std::size_t g) {
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

  void finish_gpu_file(Work w, GpuJpegOutcome outcome, bool encoded, int d, int lane_no, double t0, double t_end) {
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
  void on_cpu_after_gpu(Work w, int d) {
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

  // Filters w.src into w.dst on `devs`; false when the file failed or was discarded (reported
  // here). The records and the source's release are the caller's, once it has freed the devices.
  bool filter_file(Work& w, const std::vector<DevicePtr>& devs, JobReport& rep) {
    const int i = w.index;
    JobOptions job = opt_.job;
    job.cancel = opt_.abort;
    job.progress = nullptr;
    try {
      w.dst = Image(w.src.width(), w.src.height(), w.src.format(), pool_.allocator());
      rep = run_filter(w.src.view(), w.dst.view(), chain_, devs, job);
      return true;
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Cancelled) discard(i);
      else fail(i, fmt::format("{}: filter failed: {}", plan_.items[i].input, e.what()));
    } catch (const std::exception& e) {
      fail(i, fmt::format("{}: filter failed: {}", plan_.items[i].input, e.what()));
    }
    return false;
  }

  // A filtered file: its source's memory goes back, and it waits for an encoder.
  void send_to_encoder(Work&& w) {
    const std::size_t src_bytes = w.src.size_bytes();
    w.src = Image();
    w.charge.release(src_bytes);
    waiting(w.index);
    to_encode_.push(std::move(w));
  }

  // ---- filter: one worker per device ----
  bool should_split(const Image& img) {
    if (devices_.size() < 2) return false;
    if (opt_.split_pixels > 0) return img.pixels() >= opt_.split_pixels;
    if (img.pixels() >= kAutoSplitPixels) return true;
    if (!decoders_done_ || !to_filter_.empty() || img.pixels() < kTailSplitPixels) return false;
    std::lock_guard lock(gate_mutex_);  // only when the others are idle now: waiting for them costs more
    return busy_ == 0 && !split_running_;
  }

  // A small image takes this worker's device; a split one waits until every device is free. New
  // small images wait while a split one is waiting, so it is not starved.
  void take_devices(bool split) {
    std::unique_lock lock(gate_mutex_);
    if (split) {
      ++split_waiting_;
      gate_cv_.wait(lock, [&] { return busy_ == 0 && !split_running_; });
      --split_waiting_;
      split_running_ = true;
    } else {
      gate_cv_.wait(lock, [&] { return split_waiting_ == 0 && !split_running_; });
      ++busy_;
    }
  }
  void give_devices(bool split) {
    {
      std::lock_guard lock(gate_mutex_);
      if (split) split_running_ = false;
      else --busy_;
    }
    gate_cv_.notify_all();
  }

  void filter_loop(int d) {
    while (auto w = to_filter_.pop()) {
      const int i = w->index;
      started(i);
      if (aborting()) {
        discard(i);
        continue;
      }
      const bool split = should_split(w->src);
      take_devices(split);
      const std::vector<DevicePtr> devs = split ? devices_ : std::vector<DevicePtr>{devices_[d]};
      if (debug_log())
        std::fprintf(stderr, "[batch] file %d %dx%d -> %s\n", i, w->src.width(), w->src.height(),
                     split ? "all devices" : devices_[d]->info().id.c_str());
      const double t0 = tel_.now();
      JobReport rep;
      const bool ok = filter_file(*w, devs, rep);
      give_devices(split);
      if (!ok) continue;
      record(i, rep, split, d, t0);
      send_to_encoder(std::move(*w));
    }
  }

  // The job's records on the batch clock, with the batch's device indices and unique tile numbers.
  void record(int i, const JobReport& rep, bool split, int d, double t_start) {
    const int fallback = static_cast<int>(devices_.size());
    const int base = tile_base_.fetch_add(rep.tiles);
    for (StageRecord rec : rep.records) {
      if (!split) rec.device = rec.device == 0 ? d : fallback;
      rec.t0 += t_start;
      rec.t1 += t_start;
      rec.tile += base;
      tel_.add(rec);
    }
    FileResult& r = results_[i];
    r.filter_s = rep.wall_s;
    r.tiles = rep.tiles;
    r.retried_tiles = static_cast<int>(rep.failures.size());
    std::lock_guard lock(progress_mutex_);
    for (std::size_t k = 0; k < rep.tiles_per_device.size(); ++k) {
      if (rep.tiles_per_device[k] == 0) continue;
      const int index = split ? static_cast<int>(k) : (k == 0 ? d : fallback);
      ++images_per_device_[index];
      const std::string& name = index == fallback ? std::string("cpu-fallback") : devices_[index]->info().id;
      r.device += (r.device.empty() ? "" : "+") + name;
    }
  }

  // ---- encode ----
  void encode_loop(int lane) {
    while (auto w = to_encode_.pop()) {
      const int i = w->index;
      started(i);
      if (aborting()) {
        discard(i);
        continue;
      }
      const std::string& out = plan_.items[i].output;
      FileResult& r = results_[i];
      try {
        make_parent_folder(out);
        const double t0 = tel_.now(), c0 = thread_cpu_s();
        EncodeOptions eo;
        eo.quality = opt_.quality;
        eo.strip = opt_.strip;
        eo.gray_alpha = w->info.stored_channels == 2;
        if (w->encoded) write_file_atomically(out, w->bytes);
        else encode_file(out, chain_.empty() ? w->src.view() : w->dst.view(), eo, w->info.metadata);
        const double t1 = tel_.now();
        if (!w->encoded) r.encode_s = t1 - t0;  // else the GPU's encode time, from its events
        r.encode_cpu_s = thread_cpu_s() - c0;
        std::error_code ec;
        r.output_bytes = static_cast<std::size_t>(fs::file_size(out, ec));
        tel_.add({-1, lane, StageKind::Encode, i, t0, t1, r.output_bytes});
      } catch (const std::exception& e) {
        fail(i, e.what());
        continue;
      }
      w.reset();  // give the memory back before telling anyone
      finish(i, Status::Ok);
    }
  }

  // Creates the output's folder, refusing any path that a symbolic link leads out of OUT_DIR.
  void make_parent_folder(const std::string& out) const {
    const fs::path parent = fs::path(out).parent_path();
    auto check = [&] {
      if (!batch::resolves_within(parent.string(), out_root_))
        throw Error(ErrorKind::Io, fmt::format("{}: folder leads outside {} (symbolic link); refusing to write", out,
                                               opt_.output_dir));
    };
    check();
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec)
      throw Error(ErrorKind::Io, fmt::format("{}: cannot create folder {} ({})", out, parent.string(), ec.message()));
    check();
  }

  // ---- bookkeeping ----
  // current_ holds the files a thread works on now (decode, filter or encode), not those that wait
  // in a queue between two stages: what a person watching the batch calls "in flight".
  void started(int i) {
    std::lock_guard lock(progress_mutex_);
    current_.push_back(i);
    if (!begun_[i]) {
      begun_[i] = 1;
      ++files_in_flight_;
    }
  }
  void waiting(int i) {
    std::lock_guard lock(progress_mutex_);
    current_.erase(std::remove(current_.begin(), current_.end(), i), current_.end());
  }
  void fail(int i, const std::string& reason) {
    results_[i].reason = reason;
    finish(i, Status::Failed);
  }
  void discard(int i) {
    results_[i].reason = "discarded: the batch was interrupted while this file was in flight";
    finish(i, Status::Cancelled);
  }
  void finish(int i, Status s) {
    results_[i].status = s;
    std::lock_guard lock(progress_mutex_);
    finished_[i] = 1;
    ++files_done_;
    if (begun_[i]) --files_in_flight_;
    if (s == Status::Failed) ++files_failed_;
    if (s == Status::Ok) megapixels_done_ += static_cast<double>(results_[i].width) * results_[i].height / 1e6;
    bytes_done_ += results_[i].input_bytes;
    current_.erase(std::remove(current_.begin(), current_.end(), i), current_.end());
    report_progress();
  }
  // Called with progress_mutex_ held, so callbacks never overlap and counts never go back.
  void report_progress() {
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
  void sample_loop() {
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

  const BatchOptions& opt_;
  BatchWorkSource* const source_;  // null: every file of the plan
  BatchPlan plan_;
  const Chain chain_;
  const std::vector<DevicePtr> devices_;
  Telemetry tel_;
  MemoryBudget budget_;
  BufferPool pool_;  // declared before anything holding images, so it outlives them
  BoundedQueue<Work> to_filter_, to_encode_;
  std::vector<GpuCodecWorker> gpu_workers_;
  BoundedQueue<Work> to_gpu_;
  const std::string out_root_;
  std::vector<FileResult> results_;
  std::vector<char> finished_;
  std::vector<char> begun_;  // decoding started: the file counts as in flight until it finishes

  std::atomic<int> next_{0};
  std::atomic<int> cpu_decoding_{0};  // decode threads decoding a JPEG on the CPU while GPU codecs work
  std::atomic<bool> decoders_done_{false};
  std::atomic<int> tile_base_{0};

  std::mutex gate_mutex_;
  std::condition_variable gate_cv_;
  int busy_ = 0, split_waiting_ = 0;
  bool split_running_ = false;

  std::mutex progress_mutex_;
  int files_done_ = 0, files_failed_ = 0, files_in_flight_ = 0;
  double megapixels_done_ = 0;
  std::size_t bytes_done_ = 0, bytes_total_ = 0;
  std::vector<int> current_;
  std::vector<int> images_per_device_;

  std::mutex sampler_mutex_;
  std::condition_variable sampler_cv_;
  bool sampler_stop_ = false;
  std::vector<std::pair<double, int>> utilization_;
};

}  // namespace

BatchPlan prepare_batch(const BatchOptions& options) {
  if (!options.filters.empty()) (void)parse_chain(options.filters);  // a bad filter fails the job before the walk
  if (options.quality < 1 || options.quality > 100)
    throw Error(ErrorKind::InvalidArgument, "quality must be between 1 and 100");
  BatchPlan plan = plan_batch(options);

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
  return plan;
}

namespace {

DeviceSelection batch_devices(const BatchOptions& options) {
  if (!options.device_list.empty()) return {options.device_list, {}};
  return select_devices(options.devices, options.device_memory);
}

// The GPU codec workers for this batch: kDefaultGpuCodecLanes (or options.gpu_codec_lanes) per GPU
// among `devices`, none for --codec cpu or in a build without nvJPEG. `note` says why there are none.
std::vector<GpuCodecWorker> gpu_codec_workers(const BatchOptions& options, const std::vector<DevicePtr>& devices,
                                              std::string* note) {
  std::vector<GpuCodecWorker> workers;
  if (options.codec == CodecChoice::Cpu) return workers;
  const int per_gpu = options.gpu_codec_lanes > 0 ? options.gpu_codec_lanes : kDefaultGpuCodecLanes;
  std::string why = "no GPU among the devices";
  for (std::size_t d = 0; d < devices.size(); ++d) {
    if (devices[d]->info().kind != DeviceKind::Cuda) continue;
    for (int k = 0; k < per_gpu; ++k) {
      auto lane = make_gpu_jpeg_lane(*devices[d], &why);
      if (!lane) break;
      workers.push_back({std::move(lane), static_cast<int>(d)});
    }
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
  const bool any_gpu = std::any_of(devices.begin(), devices.end(),
                                   [](const DevicePtr& d) { return d->info().kind == DeviceKind::Cuda; });
  // Pinned memory only pays when pixels go to a GPU.
  const PixelAllocator& base =
      any_gpu && !chain.empty() && options.allocator ? *options.allocator : default_allocator();

  const std::size_t budget = options.max_inflight_bytes ? options.max_inflight_bytes : batch::default_inflight_bytes();
  const int lanes = static_cast<int>(gpu_workers.size());
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
  DeviceSelection selection = batch_devices(options);
  std::string note;
  auto workers = gpu_codec_workers(options, selection.devices, &note);
  return run_on(options, std::move(plan), source, std::move(selection), std::move(workers), std::move(note));
}

BatchReport run_batch(const BatchOptions& options) {
  if (!options.filters.empty()) (void)parse_chain(options.filters);
  // A bad --devices or --codec gpu without a GPU codec fails before OUT_DIR is touched.
  DeviceSelection selection = batch_devices(options);
  std::string note;
  auto workers = gpu_codec_workers(options, selection.devices, &note);
  return run_on(options, prepare_batch(options), nullptr, std::move(selection), std::move(workers), std::move(note));
}

}  // namespace tf
