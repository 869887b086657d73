// A folder job: a pool of decode threads -> the device scheduler -> a pool of encode threads, with
// bounded queues so peak memory does not grow with the folder. One bad file never stops the batch;
// outputs are written to a temporary name and renamed when complete.
#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "tilefilter/codec.hpp"
#include "tilefilter/scheduler.hpp"
#include "tilefilter/telemetry.hpp"

namespace tf {

struct BatchOptions {
  std::string input_dir, output_dir;
  std::vector<std::string> filters;  // specs, parsed by run_batch
  bool recursive = false;
  std::string format = "same";       // same | png | jpg | tiff
  int quality = 92;
  int decode_threads = 0, encode_threads = 0;  // 0 = from the cores
  std::string devices = "all";
  std::size_t device_memory = 0;
  JobOptions job;                    // border, schedule, faults (progress/cancel here are ignored)
  bool resume = false;
  Limits limits;
  std::size_t max_inflight_bytes = 0;  // decoded + filtered pixels in flight; 0 = from memory
  std::function<void(const struct BatchProgress&)> progress;  // any thread
  const std::atomic<bool>* cancel = nullptr;
};

struct BatchProgress {
  int files_done = 0, files_total = 0, files_failed = 0;
  double megapixels_done = 0, elapsed_s = 0;
  std::vector<std::string> current;  // files in flight
};

struct FileResult {
  enum class Status { Ok, Failed, Resumed, Cancelled } status = Status::Ok;
  std::string input, output, reason;
  int width = 0, height = 0;
  std::string format;  // "RGB u8"
  std::size_t input_bytes = 0, output_bytes = 0;
  double decode_s = 0, filter_s = 0, encode_s = 0;
  std::string decoder, encoder;  // "stb", "opencv"
};

struct BatchReport {
  std::vector<FileResult> files;
  std::vector<std::string> skipped;  // not images, with the reason: "notes.txt (not an image)"
  std::vector<std::string> device_names;
  std::vector<DeviceSummary> devices;
  std::vector<StageRecord> records;  // decode/encode (device -1) and device stages, one clock
  double wall_s = 0, decode_s = 0, encode_s = 0;
  double megapixels = 0;
  bool cancelled = false;
  int failed() const;
  int exit_code() const;  // 0 all ok, 3 some failed, 1 nothing could be done
};

// Throws tf::Error for problems with the job itself (missing input folder, OUT_DIR inside IN_DIR,
// bad filter); problems with single files end up in the report.
BatchReport run_batch(const BatchOptions& options);
std::string batch_report_json(const BatchReport& report);

}  // namespace tf
