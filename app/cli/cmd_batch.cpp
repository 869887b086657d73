// tilefilter batch IN_DIR OUT_DIR [--filter SPEC ...]: a folder of images through decode threads,
// the devices and encode threads. A progress bar on a terminal, a per-device summary at the end,
// a JSON report on request. SIGINT/SIGTERM stop taking new files and finish the ones in flight; a
// second one discards those; a third ends the process at once (a later --resume cleans up).
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "batch_mpi.hpp"
#include "commands.hpp"
#include "options.hpp"
#include "tilefilter/batch/batch.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/engine/startup.hpp"
#include "tilefilter/util/error.hpp"

namespace fs = std::filesystem;

namespace tf::cli {

namespace {

struct BatchArgs {
  std::string input, output;
  JobFlags job;
  bool recursive = false;
  std::vector<std::string> exclude;
  std::string format = "same";
  int quality = 0;          // 0 = the input's
  std::string subsampling;  // empty = the input's
  bool strip = false;
  int jobs = 0, decode_threads = 0, encode_threads = 0;
  bool resume = false;
  std::string report;
  std::size_t memory = 0;
  std::size_t split_pixels = 0;
  // Measured on two H200s (200 JPEGs of 12-24 Mpix, 2026-11-22): pinning each new buffer cost more
  // than the faster upload saved (9x9 Gaussian 4.8 s pinned, 3.3 s pageable, 3.1 s without a filter).
  std::string host_memory = "pageable";
  std::string codec = "auto";
  int gpu_codec_workers = 0, gpu_codec_batch = 0;
  bool quiet = false;
};

// Signal state: lock-free atomics only, so the handler is async-signal-safe.
std::atomic<bool> g_cancel{false}, g_abort{false};
std::atomic<int> g_signals{0};

void say(const char* text) {
  const ssize_t n = ::write(STDERR_FILENO, text, std::char_traits<char>::length(text));
  (void)n;
}

extern "C" void on_stop_signal(int sig) {
  const int n = ++g_signals;
  if (n == 1) {
    g_cancel = true;
    say("\ntilefilter: interrupted: taking no new files, finishing the ones in flight (interrupt again to discard them)\n");
  } else if (n == 2) {
    g_abort = true;
    say("\ntilefilter: discarding the files in flight (interrupt again to quit at once)\n");
  } else {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

class SignalGuard {
 public:
  SignalGuard() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalGuard() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

std::string clock_text(double s) {
  const long t = static_cast<long>(s + 0.5);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                   : fmt::format("{}:{:02}", t / 60, t % 60);
}

std::string progress_detail(const BatchProgress& p) {
  std::string s = fmt::format("{}/{} files", p.files_done, p.files_total);
  if (p.files_failed) s += fmt::format(", {} failed", p.files_failed);
  if (p.elapsed_s > 0) s += fmt::format(", {:.1f} Mpix/s", p.megapixels_done / p.elapsed_s);
  if (p.cancelling) return s + fmt::format(", stopping: {} in flight", p.files_in_flight);
  const double done = p.bytes_total ? static_cast<double>(p.bytes_done) / p.bytes_total : 0;
  if (done > 0.01 && done < 1) s += fmt::format(", ETA {}", clock_text(p.elapsed_s * (1 - done) / done));
  return s;
}

void write_report(const std::string& path, const BatchReport& report) {
  // An existing file of that name may be one of the inputs; none is when it does not exist (the common
  // case: the report is written after the batch), and then no file is looked at.
  std::error_code ec;
  if (fs::exists(path, ec))
    for (const auto& f : report.files)
      if (fs::equivalent(path, f.input, ec))
        throw Error(ErrorKind::InvalidArgument,
                    fmt::format("--report {}: is one of the input files; refusing to overwrite it", path));
  const std::string text = batch_report_json(report);
  try {
    write_file_atomically(path, {reinterpret_cast<const unsigned char*>(text.data()), text.size()});
  } catch (const Error& e) {
    throw Error(e.kind(), fmt::format("--report {}", e.what()));
  }
}

std::string seconds(double s) { return s >= 10 ? fmt::format("{:.1f} s", s) : fmt::format("{:.2f} s", s); }

// Codec names used by the files that reached that stage, "stb" or "stb, opencv".
template <class Pick> std::string codecs_used(const BatchReport& r, Pick pick) {
  std::set<std::string> names;
  for (const auto& f : r.files)
    if (const std::string& n = pick(f); !n.empty()) names.insert(n);
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "-" : s;
}

void print_summary(const BatchReport& r, const BatchArgs& a) {
  using S = FileResult::Status;
  const int ok = r.count(S::Ok), failed = r.count(S::Failed), resumed = r.count(S::Resumed),
            cancelled = r.count(S::Cancelled);
  std::string line = fmt::format("batch: {} image{}: {} ok", r.files.size(), r.files.size() == 1 ? "" : "s", ok);
  if (failed) line += fmt::format(", {} failed", failed);
  if (resumed) line += fmt::format(", {} already done", resumed);
  if (cancelled) line += fmt::format(", {} not done", cancelled);
  if (!r.skipped.empty())
    line += fmt::format("; {} other file{} skipped", r.skipped.size(), r.skipped.size() == 1 ? "" : "s");
  fmt::print("{}\n", line);
  if (r.wall_s > 0)
    fmt::print("  {:.1f} Mpix in {}: {:.1f} Mpix/s, {:.2f} images/s{}\n", r.megapixels, seconds(r.wall_s),
               r.megapixels / r.wall_s, ok / r.wall_s,
               a.job.filters.empty() ? " (no filter: decode and encode only)" : "");
  if (!r.ranks.empty()) {
    fmt::print("ranks:\n");
    for (const auto& k : r.ranks) {
      std::string done = fmt::format("{} ok", k.files_ok);
      if (k.files_failed) done += fmt::format(", {} failed", k.files_failed);
      if (k.files_resumed) done += fmt::format(", {} already done", k.files_resumed);
      if (k.files_cancelled) done += fmt::format(", {} not done", k.files_cancelled);
      fmt::print("  r{:<3} {:<16} {}, {:.1f} Mpix in {}, {} decode + {} encode threads\n", k.rank, k.host, done,
                 k.megapixels, seconds(k.wall_s), k.decode_threads, k.encode_threads);
    }
  }
  if (!a.job.filters.empty()) {
    fmt::print("devices:\n");
    for (const auto& d : r.devices) {
      if (d.name.ends_with("cpu-fallback") && d.tiles == 0) continue;
      const int images = r.images_per_device[d.device];
      std::string split = d.upload_s + d.download_s + d.kernel_s > 0
                              ? fmt::format("upload {}, kernel {}, download {}", seconds(d.upload_s),
                                            seconds(d.kernel_s), seconds(d.download_s))
                              : fmt::format("compute {}", seconds(d.compute_s));
      fmt::print("  {:<12} {:>5} images {:>6} tiles  busy {:3.0f}% ({}, idle {}){}\n", d.name, images, d.tiles,
                 r.wall_s > 0 ? 100 * d.busy_s / r.wall_s : 0.0, split, seconds(d.idle_s),
                 d.mean_utilization >= 0 ? fmt::format(", utilization {:.0f}%", d.mean_utilization) : "");
    }
  }
  double dec_mpix = 0, enc_mpix = 0, gpu_dec_mpix = 0;
  int dec_n = 0, enc_n = 0, gpu_dec_n = 0, gpu_enc_n = 0;
  double gpu_dec_s = 0, gpu_enc_s = 0;
  for (const auto& f : r.files) {
    const double m = static_cast<double>(f.width) * f.height / 1e6;
    const bool gpu_dec = is_gpu_codec(f.decoder), gpu_enc = is_gpu_codec(f.encoder);
    if (gpu_dec) gpu_dec_mpix += m, ++gpu_dec_n, gpu_dec_s += f.decode_s;
    if (gpu_enc) ++gpu_enc_n, gpu_enc_s += f.encode_s;
    if (f.decode_s > 0 && !gpu_dec) dec_mpix += m, ++dec_n;
    if (f.encode_s > 0 && !gpu_enc) enc_mpix += m, ++enc_n;
  }
  if (const int sent_back = gpu_codec_counts(r).sent_to_cpu; r.gpu_codec_lanes > 0) {
    const GpuCodecPace pace = gpu_codec_pace(r);
    fmt::print("GPU codec: {} files decoded ({:.1f} Mpix, {}), {} encoded ({}) by {} workers{}\n", gpu_dec_n,
               gpu_dec_mpix, seconds(gpu_dec_s), gpu_enc_n, seconds(gpu_enc_s), r.gpu_codec_lanes,
               sent_back > 0 ? fmt::format("; {} sent to the CPU codec (see the report's codec_note)", sent_back) : "");
    if (pace.calls > 0)
      fmt::print("  busy {:.0f}% of their time once ready, {:.1f} files a call of {}{}\n", 100 * pace.busy_share,
                 static_cast<double>(pace.files) / pace.calls, r.gpu_codec_batch,
                 pace.set_the_pace ? ": the GPU codecs set the pace" : "");
  } else if (!r.codec_note.empty() && r.codec != "cpu" &&
             std::any_of(r.device_names.begin(), r.device_names.end(),
                         [](const std::string& d) { return d.find("gpu") != std::string::npos; }))
    fmt::print("GPU codec: none ({})\n", r.codec_note);  // news only where a GPU filters
  auto per_core = [](double mpix, double s) {
    return s > 0 ? fmt::format(", {:.1f} Mpix/s per core", mpix / s) : std::string();
  };
  fmt::print("decode: {} files, {:.1f} Mpix, {} in {} threads{} ({})\n", dec_n, dec_mpix, seconds(r.decode_s),
             r.decode_threads, per_core(dec_mpix, r.decode_cpu_s),
             codecs_used(r, [](const FileResult& f) -> const std::string& {
               static const std::string none;
               return f.decode_s > 0 && !is_gpu_codec(f.decoder) ? f.decoder : none;
             }));
  fmt::print("encode: {} files, {:.1f} Mpix, {} in {} threads{} ({})\n", enc_n, enc_mpix, seconds(r.encode_s),
             r.encode_threads, per_core(enc_mpix, r.encode_cpu_s),
             codecs_used(r, [](const FileResult& f) -> const std::string& {
               static const std::string none;
               return f.encode_s > 0 && !is_gpu_codec(f.encoder) ? f.encoder : none;
             }));
  if (r.memory_bound())
    fmt::print(
        "memory: the budget of {:.0f} MiB set the pace, not the devices (threads waited {} for room; "
        "--memory raises it)\n",
        r.max_inflight_bytes / 1048576.0, seconds(r.memory_wait_s));
  const std::size_t shown = 20;
  if (!r.skipped.empty()) {
    fmt::print("skipped:\n");
    for (std::size_t i = 0; i < std::min(shown, r.skipped.size()); ++i) fmt::print("  {}\n", r.skipped[i]);
    if (r.skipped.size() > shown)
      fmt::print("  ... and {} more{}\n", r.skipped.size() - shown, a.report.empty() ? "" : " (see the report)");
  }
  for (const auto& n : r.notes) fmt::print("note: {}\n", n);
}

void run(const BatchArgs& a) {
  std::error_code ec;
  if (fs::is_regular_file(a.input, ec))  // as `vips` and `magick mogrify` users may try
    throw Error(ErrorKind::Io, fmt::format("{0}: is a file; batch filters the images of a folder (one image: "
                                           "tilefilter apply {0} OUT --filter ...)",
                                           a.input));
  BatchOptions o;
  o.input_dir = a.input;
  o.output_dir = a.output;
  o.filters = a.job.filters;
  o.recursive = a.recursive;
  o.exclude = a.exclude;
  o.format = a.format;
  o.quality = a.quality;
  if (!a.subsampling.empty()) o.subsampling = parse_subsampling(a.subsampling);
  o.strip = a.strip;
  o.decode_threads = a.decode_threads ? a.decode_threads : a.jobs;
  o.encode_threads = a.encode_threads ? a.encode_threads : a.jobs;
  o.devices = a.job.devices;
  o.device_memory = a.job.device_memory;
  o.job = job_options(a.job);
  o.resume = a.resume;
  o.limits.max_pixels = a.job.pixel_limit;
  o.max_inflight_bytes = a.memory;
  o.split_pixels = static_cast<long long>(a.split_pixels);
  // Pinned buffers speed uploads but cost a driver call to create; "pageable" leaves the staging
  // to each GPU lane's own pinned buffers, made once.
  o.allocator = a.host_memory == "pinned" ? tf::cuda::pinned_allocator() : nullptr;
  o.codec = parse_codec_choice(a.codec);
  o.gpu_codec_lanes = a.gpu_codec_workers;
  o.gpu_codec_batch = a.gpu_codec_batch;
  o.cancel = &g_cancel;
  o.abort = &g_abort;

  // Under mpirun/srun the batch is shared by the ranks (batch_mpi.cpp); rank 0 shows its own
  // progress and prints the merged summary and report, the others stay silent.
  const bool shared = launcher_ranks() > 1;
#ifndef TF_HAVE_MPI
  if (shared)
    throw Error(ErrorKind::InvalidArgument,
                "started by an MPI launcher, but this tilefilter was built without MPI (libopenmpi-dev); every rank "
                "would do the whole folder");
#endif
  Progress bar("batch");
  o.progress = [&bar](const BatchProgress& p) {
    const double fraction = p.bytes_total   ? static_cast<double>(p.bytes_done) / p.bytes_total
                            : p.files_total ? static_cast<double>(p.files_done) / p.files_total
                                            : 1.0;
    bar.update(fraction, progress_detail(p));
  };

  // Handled until the command returns, so a late signal never cuts the report or the summary short.
  SignalGuard guard;
  // The GPUs named, or those the start-up choice takes (the first few), are the only ones the driver starts.
  start_only_named_gpus();
  BatchReport report;
  if (shared) {
#ifdef TF_HAVE_MPI
    RankOutcome outcome = run_batch_mpi(o);
    if (!outcome.root) {
      command_exit_code() = outcome.exit_code;
      return;
    }
    report = std::move(outcome.report);
#endif
  } else {
    report = run_batch(o);
  }
  bar.finish();
  if (!report.device_note.empty() && !a.job.filters.empty() && !a.quiet && a.job.verbose)
    fmt::print(stderr, "note: {}\n", report.device_note);  // as `tilefilter apply`: the devices command says it
  if (!a.report.empty()) write_report(a.report, report);
  if (!a.quiet) print_summary(report, a);
  if (a.job.verbose) print_startup_steps();
  for (const auto& f : report.files) {
    if (f.status == FileResult::Status::Failed) fmt::print(stderr, "tilefilter: {}\n", f.reason);
    if (!f.write_note.empty() && !a.quiet) fmt::print(stderr, "note: {}: {}\n", f.output, f.write_note);
  }
  if (report.cancelled) {
    using S = FileResult::Status;
    int finished_in_flight = 0, discarded = 0, not_started = 0;
    for (const auto& f : report.files)
      if (f.status == S::Cancelled) (f.reason.starts_with("discarded") ? discarded : not_started)++;
    (void)finished_in_flight;
    fmt::print(
        stderr,
        "tilefilter: interrupted: {} done, {} in flight discarded, {} not started; nothing partial was left under "
        "a final name. Run again with --resume to do the rest.\n",
        report.count(S::Ok) + report.count(S::Resumed), discarded, not_started);
  }
  if (report.files.empty())
    fmt::print(stderr, "tilefilter: no image files in {}{}\n", a.input,
               a.recursive ? "" : " (add --recursive for subfolders)");
  std::fflush(stdout);
  std::fflush(stderr);
  const int code = report.exit_code();
  command_exit_code() = code;
}

}  // namespace

void add_batch(CLI::App& app) {
  auto a = std::make_shared<BatchArgs>();
  auto* cmd = app.add_subcommand(
      "batch",
      "filter every image of a folder: tilefilter batch IN_DIR OUT_DIR --filter SPEC [...] (exit 0 all ok, 3 some failed, 1 none done)");
  cmd->add_option("input", a->input, "folder of images")->required();
  cmd->add_option("output", a->output, "folder for the results (created; names mirror the input tree)")->required();
  add_job_flags(*cmd, a->job);
  add_preset_flag(*cmd, a->job);
  cmd->get_option("--filter")
      ->required(false)
      ->description("filter SPEC: name or name:key=value,... (repeat to chain; none: decode and re-encode only)");
  cmd->add_flag("-r,--recursive", a->recursive, "walk subfolders too");
  cmd->add_option("--exclude", a->exclude,
                  "a folder to leave out of the walk (repeatable); needed when OUT_DIR lies inside IN_DIR");
  cmd->add_option("--format", a->format, "output format: same, png, jpg or tiff")
      ->check(CLI::IsMember({"same", "png", "jpg", "jpeg", "tiff", "tif"}))
      ->capture_default_str();
  add_jpeg_flags(*cmd, a->quality, a->subsampling);
  cmd->add_flag("--strip", a->strip, "drop EXIF, ICC profile and XMP (copied to the outputs by default)");
  cmd->add_option("-j,--jobs", a->jobs, "decode threads and encode threads (default: one of each per core)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--decode-threads", a->decode_threads, "decode threads (overrides --jobs)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--encode-threads", a->encode_threads, "encode threads (overrides --jobs)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--resume", a->resume, "skip files whose output already exists complete");
  cmd->add_option("--report", a->report,
                  "write a JSON report: every file with status, sizes, timings, codecs; per-device totals");
  cmd->add_option("--memory", a->memory,
                  "cap on decoded and filtered pixels (and compressed bytes) in flight, e.g. 2G (default: 1.5G less "
                  "the GPU codecs' own host memory, at least 512M; less where the machine has less than 6G; on CPU "
                  "devices alone a JPEG-to-JPEG file streams band by band and holds at most 16M of it)")
      ->transform(size_value());
  cmd->add_option("--host-memory", a->host_memory,
                  "decoded images in pinned or pageable host memory when a GPU filters them")
      ->check(CLI::IsMember({"pinned", "pageable"}))
      ->capture_default_str();
  cmd->add_option(
         "--split-pixels", a->split_pixels,
         "images with at least this many pixels are split across all devices, smaller ones go whole to one (default 64M)")
      ->transform(size_value());
  cmd->add_option("--codec", a->codec,
                  "where JPEGs are decoded and encoded: auto (the CPU until the GPUs' nvJPEG is ready, then the GPUs), "
                  "cpu, or gpu (every JPEG the GPU codec takes)")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}))
      ->capture_default_str();
  cmd->add_option("--gpu-codec-workers", a->gpu_codec_workers,
                  fmt::format("GPU codec workers per GPU (default {}: a worker decodes its next batch while "
                              "it filters and encodes the last)",
                              kDefaultGpuCodecLanes))
      ->check(CLI::Range(1, 32));
  cmd->add_option("--gpu-codec-batch", a->gpu_codec_batch,
                  fmt::format("JPEGs a GPU codec worker decodes in one call (default {})", kDefaultGpuCodecBatch))
      ->check(CLI::Range(1, 64));
  cmd->add_flag("-q,--quiet", a->quiet, "print only errors");
  cmd->callback([a] {
    BatchArgs args = *a;
    args.job = with_preset(a->job);
    run(args);
  });
}

}  // namespace tf::cli
