// A folder job: a pool of decode threads -> the device scheduler -> a pool of encode threads, with
// bounded queues so peak memory does not grow with the folder. One bad file never stops the batch;
// outputs are written to a temporary name and renamed when complete.
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "tilefilter/engine/device.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/engine/telemetry.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/gpu_jpeg.hpp"

namespace tf {

struct BatchOptions {
  std::string input_dir, output_dir;
  std::vector<std::string> filters;  // specs, parsed by run_batch; empty = no filter (decode + encode only)
  bool recursive = false;
  std::vector<std::string> exclude;  // folders left out of the walk (needed when OUT_DIR lies inside IN_DIR)
  std::string format = "same";       // same | png | jpg | tiff
  int quality = 0;                   // JPEG / WebP 1..100; 0 = the input's (92 when not a JPEG)
  ChromaSubsampling subsampling = ChromaSubsampling::FromInput;  // JPEG: the input's unless set
  bool strip = false;                          // drop EXIF / ICC / XMP instead of copying them to the outputs
  int decode_threads = 0, encode_threads = 0;  // 0 = from the cores
  std::string devices = "all";
  std::vector<DevicePtr> device_list;  // when not empty, used instead of `devices`
  std::size_t device_memory = 0;
  JobOptions job;  // border, schedule, faults (progress/cancel here are ignored)
  bool resume = false;
  Limits limits;
  std::size_t max_inflight_bytes = 0;  // decoded + filtered pixels in flight; 0 = default_inflight_bytes()
  long long split_pixels = 0;          // images with at least this many pixels are split across all
                                       // devices; smaller ones go whole to one device. 0 = automatic
  // Where decoded pixels live (the CLI passes tf::cuda::pinned_allocator()); used only when a GPU is
  // among the devices. Buffers are recycled through a pool bounded by max_inflight_bytes.
  const PixelAllocator* allocator = nullptr;
  // Where JPEGs are decoded and encoded (`--codec`): on the GPUs' codecs (gpu_jpeg.hpp) when this
  // build has one and the devices include a GPU, else by the CPU codec threads.
  CodecChoice codec = CodecChoice::Auto;
  int gpu_codec_lanes = 0;  // GPU codec workers per GPU; 0 = kDefaultGpuCodecLanes
  int gpu_codec_batch = 0;  // files a GPU codec worker decodes in one call; 0 = kDefaultGpuCodecBatch
  std::function<void(const struct BatchProgress&)> progress;  // any thread
  // Stop taking new files; the files in flight are finished.
  const std::atomic<bool>* cancel = nullptr;
  // Also discard the files in flight (their filter job is cancelled, nothing is written for them).
  const std::atomic<bool>* abort = nullptr;
};

struct BatchProgress {
  int files_done = 0, files_total = 0, files_failed = 0;
  double megapixels_done = 0, elapsed_s = 0;
  std::size_t bytes_done = 0, bytes_total = 0;  // input file sizes, for an ETA
  bool cancelling = false;
  int files_in_flight = 0;           // started and not finished: worked on now or queued between stages
  std::vector<std::string> current;  // files being decoded, filtered or encoded now (not those queued)
};

struct FileResult {
  enum class Status { Ok, Failed, Resumed, Cancelled } status = Status::Ok;
  std::string input, output, reason;
  int width = 0, height = 0;
  std::string format;  // "RGB u8"
  std::size_t input_bytes = 0, output_bytes = 0;
  double decode_s = 0, filter_s = 0, encode_s = 0;
  double decode_cpu_s = 0, encode_cpu_s = 0;  // CPU time of the codec thread: per-core codec speed
  std::string decoder, encoder;               // "libjpeg", "nvjpeg-hardware", "nvjpeg"
  std::string codec_note;                     // why a JPEG meant for a GPU codec went to the CPU
  std::string write_note;                     // what the writer chose instead, e.g. deflate for a float JPEG TIFF
  std::string device;                         // "cpu0", or "gpu0+gpu1" when the image was split
  int tiles = 0;
  int retried_tiles = 0;  // tile attempts that failed on a device and were retried
  int rank = -1;          // the MPI rank that did the file (set only for a batch spread over ranks)
};
const char* to_string(FileResult::Status s);  // "ok", "failed", "resumed", "cancelled"

struct BatchRankSummary {
  int rank = 0;
  std::string host;
  double wall_s = 0;  // from the rank's start to its last file
  int files_ok = 0, files_failed = 0, files_resumed = 0, files_cancelled = 0;
  double megapixels = 0;
  int decode_threads = 0, encode_threads = 0;
  std::string device_note;
  std::vector<std::string> devices;  // ids as in the merged report ("r1:gpu0")
};

// One GPU codec worker (--codec gpu or auto): when its lane was ready and how its time went after that.
// A worker whose lane is busy nearly all the time bounds its GPU; one that is often starved waits for
// files (the budget, or the decode threads).
struct GpuCodecWorkerSummary {
  std::string device;        // "gpu0"; "r1:gpu0" in a report merged over MPI ranks
  double ready_s = -1;       // seconds into the batch its lane was ready; -1: it never was
  int calls = 0, files = 0;  // its lane's calls, and the files they took
  double busy_s = 0;         // in its lane's calls (decode, filter, encode, the results collected), either half
  double starved_s = 0;      // the rest of its time since its lane was ready: waiting for files
  GpuJpegSteps steps;        // what busy_s was made of, on the host (its halves overlap: the steps add up to more)
};

struct BatchReport {
  std::string input_dir, output_dir;
  std::vector<std::string> filters;
  std::vector<FileResult> files;
  std::vector<std::string> skipped;       // not images, with the reason: "notes.txt (not an image)"
  std::vector<std::string> device_names;  // index = StageRecord::device; the last is "cpu-fallback"
  std::vector<DeviceSummary> devices;
  std::vector<int> images_per_device;                // whole images; a split image counts for every device it used
  std::vector<StageRecord> records;                  // decode/encode (device -1) and device stages, one clock
  std::string device_note;                           // e.g. "no GPU ...; using 16 CPU workers"
  std::string codec;                                 // "auto", "cpu" or "gpu", as asked
  int gpu_codec_lanes = 0;                           // GPU codec workers, all GPUs together
  int gpu_codec_batch = 0;                           // the most files one of their calls takes
  std::vector<GpuCodecWorkerSummary> codec_workers;  // one a worker, in order
  std::string codec_note;                            // why there are none, when a GPU codec was asked for
  std::vector<std::string> notes;                    // e.g. stale temporary files removed
  double wall_s = 0, decode_s = 0, encode_s = 0;     // decode/encode: thread seconds, summed over files
  double decode_cpu_s = 0, encode_cpu_s = 0;         // the same in CPU time
  double megapixels = 0;
  int decode_threads = 0, encode_threads = 0;
  std::size_t max_inflight_bytes = 0, peak_inflight_bytes = 0;  // the budget, and the most it held
  double memory_wait_s = 0;  // time threads waited for room in the budget, summed over the threads
  // The budget, not the devices, set the pace: threads waited for room for over a tenth of the run, and where
  // GPU codec workers took most files, they too waited for files or took calls short of a batch.
  bool memory_bound() const;
  bool cancelled = false;
  // A batch spread over MPI ranks: one entry per rank (the merged report's devices are named
  // "rN:cpu0"); empty for a single process.
  std::vector<BatchRankSummary> ranks;
  int failed() const;
  int count(FileResult::Status s) const;
  int exit_code() const;  // 0 all ok, 3 some failed or cancelled, 1 nothing could be done
};

// What a batch would do, without doing it: the walk, the output names, what is skipped. Throws
// tf::Error for problems with the job itself (see run_batch).
struct BatchItem {
  std::string input, output;  // full paths
  std::string relative;       // input path relative to IN_DIR, as shown to a person
  std::size_t input_bytes = 0;
  bool complete = false;  // --resume: the output is already there, complete
  std::string problem;    // set when the file fails before decoding (e.g. would overwrite an input)
};
struct BatchPlan {
  std::vector<BatchItem> items;
  std::vector<std::string> skipped;
  std::vector<std::string> notes;
};
BatchPlan plan_batch(const BatchOptions& options);

// GPU codec workers per GPU when BatchOptions leaves it 0: one. A worker runs its batches in two halves
// on two threads (the next batch is parsed and decoded while this one is filtered and encoded), so one
// keeps a GPU's decoder busy; more only cost start-up (nvJPEG makes states one at a time in a process)
// and host memory. 4xH100, 64 cores, 4000x3000 4:2:0 q90 photos, in-process (2026-11-28): 2000 on one
// GPU 3.97-3.99 s with one worker (1.36 GiB peak), 3.94-3.95 s with two (1.71 GiB), 3.99-4.10 s with
// three (2.01 GiB); 10 000 on four GPUs 6.89 s with one a GPU (1.84 GiB), 7.36 s with two, 8.34 s with
// three (2.41 GiB).
inline constexpr int kDefaultGpuCodecLanes = 1;
// Files a worker's hardware decoder call takes: one H100 decoded 6.8 Gpix/s in batches of 8, 9.8 in
// batches of 32 and 10.6 in batches of 100 (tests/bench/nvjpeg_probe.py, 2026-11-27); 2000 photos on
// one H100 ran at 5.6 Gpix/s with two workers of 32 and 5.2 with two of 16 or 64.
inline constexpr int kDefaultGpuCodecBatch = 32;

// Throws tf::Error for problems with the job itself (missing input folder, OUT_DIR inside IN_DIR,
// bad filter, `--codec gpu` without a GPU codec); problems with single files end up in the report.
BatchReport run_batch(const BatchOptions& options);
std::string batch_report_json(const BatchReport& report);

// Whether a FileResult's decoder or encoder is a GPU codec ("nvjpeg-hardware", "nvjpeg-cuda", "nvjpeg").
bool is_gpu_codec(const std::string& codec);
// Of the files that ended ok: how many a GPU codec decoded and encoded, and how many were meant for
// it but went to the CPU codec (with a codec_note).
struct GpuCodecCounts {
  int decoded = 0, encoded = 0, sent_to_cpu = 0;
};
GpuCodecCounts gpu_codec_counts(const BatchReport& report);
// How the GPU codec workers were fed, all together: the files and calls they took, and their busy share of
// the time since their lanes were ready. They set the pace where they were busy nine tenths of it with calls
// of nine tenths of a batch or more (decode threads waiting for room then wait behind them).
struct GpuCodecPace {
  int files = 0, calls = 0;
  double busy_share = 0;
  bool set_the_pace = false;
};
GpuCodecPace gpu_codec_pace(const BatchReport& report);

// ---- One batch over several processes (MPI ranks; app/cli/batch_mpi.cpp) ----
// run_batch(options) is prepare_batch, then run_batch(options, plan, nullptr). Spread over
// processes, only one prepares (walks IN_DIR, cleans OUT_DIR's stale temporaries, checks and writes
// the job record); every process runs the same plan, taking its files from a shared source.

// Where a process takes its next file from: a plan index, or -1 when none is left for it. Called
// from every decode thread at once. Without a source, a process takes every file of the plan.
class BatchWorkSource {
 public:
  virtual ~BatchWorkSource() = default;
  virtual int next() = 0;
  virtual int rank() const = 0;  // written to the FileResult of every file this process takes
};

// Validates the job (filters, quality), walks IN_DIR and readies OUT_DIR; throws tf::Error as run_batch.
BatchPlan prepare_batch(const BatchOptions& options);
// Runs `plan` (as prepared by prepare_batch, possibly in another process). With a source, files
// the source never handed out are reported Cancelled with rank -1 (another process did them).
BatchReport run_batch(const BatchOptions& options, BatchPlan plan, BatchWorkSource* source);
// One report from the reports of every rank of one plan (index = rank): each file's result from
// the rank that did it, codec totals summed, the devices of every rank named "rN:ID", and a summary
// per rank. `wall_s` is the whole job's time.
BatchReport merge_batch_reports(std::vector<BatchReport> per_rank, const std::vector<std::string>& hosts,
                                double wall_s);

}  // namespace tf
