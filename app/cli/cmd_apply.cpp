// tilefilter apply IN OUT --filter SPEC...
#include <filesystem>

#include <fmt/format.h>

#include "commands.hpp"
#include "options.hpp"
#include "tilefilter/codec.hpp"
#include "tilefilter/error.hpp"
#include "tilefilter/scheduler.hpp"

namespace fs = std::filesystem;

namespace tf::cli {

namespace {

struct ApplyArgs {
  std::string input, output;
  JobFlags job;
  int quality = 95;
  bool quiet = false;
};

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(b, ec) && fs::equivalent(a, b, ec)) return true;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

void run_apply(const ApplyArgs& a) {
  if (same_file(a.input, a.output))
    throw Error(ErrorKind::InvalidArgument, fmt::format("{}: output is the input file; refusing to overwrite it", a.output));
  const Chain chain = parse_chain(a.job.filters);
  const JobOptions options = job_options(a.job);
  // Check the output before spending time: its format must hold the image, its folder must exist.
  const fs::path out_dir = fs::path(a.output).parent_path().empty() ? fs::path(".") : fs::path(a.output).parent_path();
  std::error_code ec;
  if (!fs::is_directory(out_dir, ec))
    throw Error(ErrorKind::Io, fmt::format("{}: cannot write (folder {} does not exist)", a.output, out_dir.string()));
  if (fs::is_directory(a.output, ec)) throw Error(ErrorKind::Io, fmt::format("{}: is a directory", a.output));

  Limits limits;
  limits.max_pixels = a.job.pixel_limit;
  const Image src = decode_file(a.input, limits);
  std::string why;
  if (!can_encode(a.output, src.format(), &why)) throw Error(ErrorKind::InvalidArgument, fmt::format("{}: {}", a.output, why));
  const DeviceSelection sel = select_devices(a.job.devices, a.job.device_memory);
  if (!sel.note.empty() && !a.quiet) fmt::print(stderr, "note: {}\n", sel.note);

  Progress progress("filtering");
  JobOptions opt = options;
  opt.progress = [&progress](int done, int total) { progress.update(static_cast<double>(done) / total); };
  JobReport report;
  const Image dst = filter_image(src, chain, sel.devices, opt, &report);
  progress.finish();
  encode_file(a.output, dst.view(), EncodeOptions{a.quality});
  if (!a.quiet) {
    std::string devices;
    for (std::size_t d = 0; d < report.tiles_per_device.size(); ++d)
      if (report.tiles_per_device[d] > 0)
        devices += fmt::format("{}{} ({} tiles)", devices.empty() ? "" : ", ", report.device_names[d], report.tiles_per_device[d]);
    fmt::print("{}: {}x{} {} -> {} in {:.1f} ms on {}{}\n", a.input, src.width(), src.height(), to_string(src.format()),
               a.output, report.wall_s * 1e3, devices,
               report.failures.empty() ? "" : fmt::format(" ({} tile attempts failed and were retried)", report.failures.size()));
    for (const auto& f : report.failures) fmt::print(stderr, "warning: tile {} failed on {}: {}\n", f.tile, f.device, f.message);
  }
}

}  // namespace

void add_apply(CLI::App& app) {
  auto args = std::make_shared<ApplyArgs>();
  auto* cmd = app.add_subcommand("apply", "filter one image: tilefilter apply IN OUT --filter SPEC [--filter SPEC ...]");
  cmd->add_option("input", args->input, "input image")->required();
  cmd->add_option("output", args->output, "output image; the format follows the extension")->required();
  add_job_flags(*cmd, args->job);
  cmd->add_option("--quality", args->quality, "JPEG/WebP quality 1-100")->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_flag("-q,--quiet", args->quiet, "print nothing on success");
  cmd->callback([args] { run_apply(*args); });
}

}  // namespace tf::cli
