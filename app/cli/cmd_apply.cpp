// tilefilter apply IN OUT --filter SPEC...: one image, streamed band by band through the devices
// when its format allows (TIFF, PNG, JPEG), so its size is bounded by the disk, not by memory.
#include <algorithm>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "commands.hpp"
#include "options.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/engine/startup.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/io/stream.hpp"
#include "tilefilter/util/error.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace fs = std::filesystem;

namespace tf::cli {

namespace {

struct ApplyArgs {
  std::string input, output;
  JobFlags job;
  WriteFlags write;
  std::size_t memory = 0;
  int band_rows = 0;
  bool autorotate = false;
  bool quiet = false;
};

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(b, ec) && fs::equivalent(a, b, ec)) return true;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

void run_apply(const ApplyArgs& a) {
  if (same_file(a.input, a.output))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("{}: output is the input file; refusing to overwrite it", a.output));
  const JobFlags job = with_preset(a.job);
  const Chain chain = parse_chain(job.filters);
  JobOptions options = job_options(job);
  // Check the output before spending time: its folder must exist.
  const fs::path out_dir = fs::path(a.output).parent_path().empty() ? fs::path(".") : fs::path(a.output).parent_path();
  std::error_code ec;
  if (!fs::is_directory(out_dir, ec))
    throw Error(ErrorKind::Io, fmt::format("{}: cannot write (folder {} does not exist)", a.output, out_dir.string()));
  if (fs::is_directory(a.output, ec)) throw Error(ErrorKind::Io, fmt::format("{}: is a directory", a.output));

  StreamOptions stream;
  stream.limits.max_pixels = a.job.pixel_limit;
  stream.limits.max_stream_pixels = a.job.stream_pixel_limit;
  stream.write = write_options(a.write);
  stream.memory_budget = a.memory;
  stream.band_rows = a.band_rows;
  stream.autorotate = a.autorotate;
  // "all" (the default) leaves the GPUs alone, without a CUDA call, when the image is filtered on
  // the CPU workers sooner than a GPU starts (the header gives its size).
  std::string devices = a.job.devices;
  if (devices == "all") {
    const ImageInfo info = open_image(a.input, stream.limits)->info();
    const StartupChoice choice = choose_cpu_for_small_work(
        {static_cast<double>(info.width) * info.height, info.format.channels, chain_fmas_per_pixel(chain), 0},
        default_threads(), gpus_visible_without_cuda());
    if (choice.cpu_only) devices = "cpu";
    if (a.job.verbose) fmt::print(stderr, "[startup] {}\n", choice.reason);
  }
  start_only_named_gpus();  // --devices 0: the driver starts GPU 0 alone (startup.hpp)
  const DeviceSelection sel = select_devices(devices, a.job.device_memory);
  // No GPU is not news on a machine without one: said by `tilefilter devices`, and here under --verbose.
  if (!sel.note.empty() && a.job.verbose) fmt::print(stderr, "note: {}\n", sel.note);

  Progress progress("filtering");
  progress.show_eta();
  stream.progress = [&progress](double fraction) { progress.update(fraction); };
  const StreamReport report = filter_file(a.input, a.output, chain, sel.devices, options, stream);
  progress.finish();
  if (!a.quiet) {
    if (!report.note.empty()) fmt::print(stderr, "note: {}: {}\n", a.input, report.note);
    std::string devices;
    const JobReport& job = report.job;
    for (std::size_t d = 0; d < job.tiles_per_device.size() && d < job.device_names.size(); ++d)
      if (job.tiles_per_device[d] > 0)
        devices +=
            fmt::format("{}{} ({} tiles)", devices.empty() ? "" : ", ", job.device_names[d], job.tiles_per_device[d]);
    fmt::print(
        "{}: {}x{} {} -> {} in {:.1f} ms on {} ({} band{} of {} rows; busy: decode {:.2f} s [{}], devices "
        "{:.2f} s, encode {:.2f} s [{}]){}\n",
        a.input, report.width, report.height, to_string(report.format), a.output, report.wall_s * 1e3, devices,
        report.bands, report.bands == 1 ? "" : "s", report.band_rows, report.decode_s, report.decoder, report.filter_s,
        report.encode_s, report.encoder,
        job.failures.empty() ? "" : fmt::format(" ({} tile attempts failed and were retried)", job.failures.size()));
    for (const auto& f : job.failures)
      fmt::print(stderr, "warning: tile {} failed on {}: {}\n", f.tile, f.device, f.message);
  }
  if (a.job.verbose) print_startup_steps();
}

}  // namespace

void add_apply(CLI::App& app) {
  auto args = std::make_shared<ApplyArgs>();
  auto* cmd =
      app.add_subcommand("apply", "filter one image: tilefilter apply IN OUT --filter SPEC [--filter SPEC ...]");
  cmd->add_option("input", args->input, "input image")->required();
  cmd->add_option("output", args->output, "output image; the format follows the extension")->required();
  add_job_flags(*cmd, args->job);
  add_preset_flag(*cmd, args->job);
  add_write_flags(*cmd, args->write);
  cmd->add_option("--memory", args->memory,
                  "host memory for pixels in flight and the codecs, e.g. 1G (default: 48M for pixels plus 3M per "
                  "core for codecs); TIFF, PNG and JPEG stream through it band by band, whatever their size")
      ->transform(size_value());
  cmd->add_option("--band-rows", args->band_rows, "rows per band (default: from --memory)")->group("");
  cmd->add_flag("--autorotate", args->autorotate,
                "turn the pixels upright by the EXIF orientation and write orientation 1 (default: pixels as stored, "
                "tag copied, so viewers show the same picture)");
  cmd->add_flag("-q,--quiet", args->quiet, "print nothing on success");
  cmd->callback([args] { run_apply(*args); });
}

}  // namespace tf::cli
