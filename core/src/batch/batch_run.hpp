// BatchRun, one batch run through the pipeline (pipeline.cpp), and the pieces its stages share. Its member
// functions are defined by stage: pipeline.cpp (the run, bookkeeping and progress), pipeline_decode.cpp,
// pipeline_gpu.cpp (the GPU codecs), pipeline_filter.cpp and pipeline_encode.cpp. Internal to core/src/batch.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../io/format_whole.hpp"
#include "batch_internal.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf::batch_detail {

using batch::BoundedQueue;
using batch::BufferPool;
using batch::BytesPool;
using batch::Charge;
using batch::MemoryBudget;
using Status = FileResult::Status;

inline double thread_cpu_s() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

inline bool debug_log() {
  static const bool on = std::getenv("TILEFILTER_DEBUG") != nullptr;
  return on;
}

struct Work {
  int index = -1;
  Image src, dst;
  ImageInfo info;  // metadata and stored channels, carried to the output
  Charge charge;   // budget for src and dst, or for the bytes
  // The GPU codec's path: the file's compressed bytes on the way in, and the output's JPEG stream
  // on the way out when `encoded` (the writer adds info.metadata to it: the GPU worker goes on meanwhile).
  std::vector<unsigned char> bytes;
  bool encoded = false;
};

inline bool is_jpeg_path(const std::string& path) {
  const std::string ext = extension_of(path);
  return ext == ".jpg" || ext == ".jpeg";
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

// The CPU decodes of JPEGs beside GPU codec workers (--codec auto): at most half the budget in their images
// (pixels, and the result with a filter, as decode_on_cpu charges them), one image at least, and at most
// `most_files` at once. Without it every decode thread began a CPU decode until a GPU codec lane was ready
// (2.5-3 s in on 4xH100): on 64 cores with a 512 MiB budget about 7 of those 72 MB photos fit, and the other
// ~57 threads waited for the budget inside the decoder, holding files the GPUs could have taken (2000 12-MP
// photos: CPU-decoded files took a median 1.0-2.7 s for 0.1 s of CPU, and finished last; 2026-11-27).
class CpuDecodeShare {
 public:
  CpuDecodeShare(std::size_t budget, int most_files) : most_bytes_(budget / 2), most_files_(std::max(1, most_files)) {}
  // Takes room for an image of `bytes` once it fits, waiting at most `most` for it; false when it did not fit.
  bool take(std::size_t bytes, std::chrono::milliseconds most = {}) {
    std::unique_lock lock(mutex_);
    if (!room_.wait_for(lock, most, [&] { return fits(bytes); })) return false;
    ++files_;
    bytes_ += bytes;
    return true;
  }
  void give_back(std::size_t bytes) {
    {
      std::lock_guard lock(mutex_);
      --files_;
      bytes_ -= std::min(bytes_, bytes);
    }
    room_.notify_all();
  }

 private:
  bool fits(std::size_t bytes) const { return files_ == 0 || (files_ < most_files_ && bytes_ + bytes <= most_bytes_); }
  const std::size_t most_bytes_;
  const int most_files_;
  std::mutex mutex_;
  std::condition_variable room_;
  std::size_t bytes_ = 0;
  int files_ = 0;
};

// One GPU codec worker: its lane and the index of its GPU among the batch's devices.
struct GpuCodecWorker {
  std::unique_ptr<GpuJpegLane> lane;
  int device = 0;
};

// Images this large are split across every device; smaller ones go whole to one device, several at
// once (tiles only add overhead there).
inline constexpr long long kAutoSplitPixels = 64LL << 20;
// Budget a file filtered band by band holds (stream_on_cpu): its bands, windows and codec state. A 12-MP JPEG
// through `apply --memory 16M` peaked 1 MB above the process's own 63 MB (2-core VM, 2026-11-28).
inline constexpr std::size_t kStreamFileBytes = 16ULL << 20;

class BatchRun {
 public:
  BatchRun(const BatchOptions& opt, BatchPlan plan, Chain chain, std::vector<DevicePtr> devices, std::size_t budget,
           const PixelAllocator& base, BatchWorkSource* source, std::vector<GpuCodecWorker> gpu_workers);

  BatchReport run();

 private:
  int cores() const { return default_threads(); }
  int decode_threads() const { return opt_.decode_threads > 0 ? opt_.decode_threads : cores(); }
  int encode_threads() const { return opt_.encode_threads > 0 ? opt_.encode_threads : cores(); }
  bool aborting() const { return opt_.abort && opt_.abort->load(); }
  bool stopping() const { return (opt_.cancel && opt_.cancel->load()) || aborting(); }

  // ---- decode (pipeline_decode.cpp) ----
  void decode_loop(int lane);
  void decode_one(int i, int lane, GpuPlace& place);
  // wait: whether the decode waits for room in the budget (false: it may go over the cap).
  bool decode_on_cpu(int i, int lane, Work& w, bool wait = true);
  // CPU-only batches with a filter: file i decoded, filtered and encoded band by band on this thread
  // (tf::filter_file on one CPU device), holding kStreamFileBytes of the budget instead of the image
  // twice; false when the file is not for that path (it then goes whole, as any file).
  bool stream_on_cpu(int i, int lane);
  // File i's JPEG header (jpeg_stream_info), its bytes read through bytes_ (a fresh vector a file was an
  // mmap and its page faults: give_large_buffers_back). Throws what reading or parsing throws.
  JpegStreamInfo jpeg_header(int i);
  PixelAllocator budget_allocator(Charge& charge, std::size_t factor, bool wait = true);
  bool send_to_gpu(int i, int lane, std::size_t& cpu_share, GpuPlace& place);
  bool charge_for_gpu(Work& w, std::size_t bytes);
  bool gpu_or_cpu(Work& w, std::size_t charge, std::size_t image_bytes, std::size_t& cpu_share);

  // Decode threads that may decode JPEGs on the CPU at once while GPU codecs work (--codec auto; cpu_decodes_
  // also keeps their images within half the budget): one thread per GPU codec worker stays free to feed them.
  int cpu_decode_cap() const { return std::max(1, decode_threads() - static_cast<int>(gpu_workers_.size())); }

  // ---- GPU codecs (pipeline_gpu.cpp): a few workers per GPU, each decodes, filters and encodes whole files ----
  int gpu_batch() const { return opt_.gpu_codec_batch > 0 ? opt_.gpu_codec_batch : kDefaultGpuCodecBatch; }
  void gpu_loop(std::size_t g);
  bool wait_for_lane(std::size_t g);
  void feed_lane(std::size_t g);
  std::vector<GpuJpegJob> gpu_jobs(std::vector<Work>& batch);
  void give_back_bytes(std::vector<Work>& batch, std::vector<GpuJpegJob>& jobs);
  void finish_gpu_file(Work w, GpuJpegOutcome outcome, bool encoded, int d, int lane_no, double t0, double t_end);
  void on_cpu_after_gpu(Work w, int d);

  // ---- filter: one worker per device (pipeline_filter.cpp) ----
  bool filter_file(Work& w, const std::vector<DevicePtr>& devs, JobReport& rep);
  bool should_split(const Image& img);
  void take_devices(bool split);
  void give_devices(bool split);
  void filter_loop(int d);
  void record(int i, const JobReport& rep, bool split, int d, double t_start);

  // ---- encode (pipeline_encode.cpp) ----
  void send_to_encoder(Work&& w);
  void encode_loop(int lane);
  void make_parent_folder(const std::string& out) const;
  void write_gpu_stream(const std::string& out, Work& w);

  // ---- bookkeeping (pipeline.cpp) ----
  void started(int i);
  void waiting(int i);
  void fail(int i, const std::string& reason);
  void discard(int i);
  void finish(int i, Status s);
  void report_progress();
  void sample_loop();

  const BatchOptions& opt_;
  BatchWorkSource* const source_;  // null: every file of the plan
  BatchPlan plan_;
  const Chain chain_;
  const std::vector<DevicePtr> devices_;
  bool stream_files_ = false;  // CPU devices only, a filter, no GPU codec: stream_on_cpu takes the JPEGs
  Telemetry tel_;
  MemoryBudget budget_;
  BufferPool pool_;  // declared before anything holding images, so it outlives them
  BytesPool bytes_;  // files' bytes and encoded streams, for the GPU codecs' files
  BoundedQueue<Work> to_filter_, to_encode_;
  std::vector<GpuCodecWorker> gpu_workers_;
  std::vector<GpuCodecWorkerSummary> worker_summaries_;  // one a worker, each written by its worker alone
  std::atomic<bool> gpu_queue_closed_ = false;           // the decoders are done: no more files for the GPU codecs
  std::atomic<int> gpu_lanes_ready_{0};                  // GPU codec lanes started and taking files
  // GPUs whose first codec lane is still being made (their second lanes wait for none to be left).
  struct LaneGate {
    std::mutex mutex;
    std::condition_variable done;
    int pending = 0;
  };
  const std::shared_ptr<LaneGate> first_lanes_ = std::make_shared<LaneGate>();
  // Whether GPU codec worker g is its GPU's first (the workers come GPU by GPU).
  bool first_of_its_gpu(std::size_t g) const { return g == 0 || gpu_workers_[g - 1].device != gpu_workers_[g].device; }
  BoundedQueue<Work> to_gpu_;
  const std::string out_root_;
  std::vector<FileResult> results_;
  std::vector<char> finished_;
  std::vector<char> begun_;  // decoding started: the file counts as in flight until it finishes

  std::atomic<int> next_{0};
  double start_s_ = 0;  // the batch's start on tel_'s clock (run())
  // Declared after budget_ and gpu_workers_, which it is made from.
  CpuDecodeShare cpu_decodes_{budget_.cap(), cpu_decode_cap()};
  std::atomic<bool> decoders_done_{false};
  std::atomic<int> tile_base_{0};

  std::mutex gate_mutex_;
  std::condition_variable gate_cv_;
  int busy_ = 0, split_waiting_ = 0;
  bool split_running_ = false;

  std::mutex progress_mutex_;
  int files_done_ = 0, files_failed_ = 0, files_in_flight_ = 0;
  bool first_done_ = false;  // the first file written (a start-up step)
  double megapixels_done_ = 0;
  std::size_t bytes_done_ = 0, bytes_total_ = 0;
  std::vector<int> current_;
  std::vector<int> images_per_device_;

  std::mutex sampler_mutex_;
  std::condition_variable sampler_cv_;
  bool sampler_stop_ = false;
  std::vector<std::pair<double, int>> utilization_;
};

}  // namespace tf::batch_detail
