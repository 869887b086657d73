#include "options.hpp"

#include <cstdio>
#include <unistd.h>

#include <fmt/format.h>

#include "tilefilter/error.hpp"

namespace tf::cli {

void add_job_flags(CLI::App& cmd, JobFlags& f) {
  cmd.add_option("-f,--filter", f.filters, "filter SPEC: name or name:key=value,... (repeat to chain; see `tilefilter filters`)")
      ->required();
  cmd.add_option("--border", f.border, fmt::format("border mode: {}", border_mode_names()))->capture_default_str();
  cmd.add_option("--border-value", f.border_value, "value outside the image for --border constant")->capture_default_str();
  cmd.add_option("--devices", f.devices, "all | gpu | cpu | cpu:N | GPU ordinals like 0,1 | mixes like 0,cpu:2")
      ->capture_default_str();
  cmd.add_option("--tile", f.tile, "tile size N or WxH in pixels (default: chosen from device memory)");
  cmd.add_option("--streams", f.streams, "CUDA streams per GPU (default: chosen by the backend)");
  cmd.add_option("--device-memory", f.device_memory, "cap on memory used per GPU, e.g. 512M (default: free memory)")
      ->transform(CLI::AsSizeValue(false));
  cmd.add_option("--pixel-limit", f.pixel_limit, "refuse images with more pixels than this")->capture_default_str();
  cmd.add_option("--inject-faults", f.fault_rate, "testing: probability that a GPU tile attempt fails")->group("");
}

JobOptions job_options(const JobFlags& f) {
  JobOptions o;
  auto mode = parse_border_mode(f.border);
  if (!mode) throw Error(ErrorKind::InvalidArgument, fmt::format("--border '{}': use one of {}", f.border, border_mode_names()));
  o.border = {*mode, static_cast<float>(f.border_value)};
  if (!f.tile.empty()) {
    int w = 0, h = 0;
    char x = 0, extra = 0;
    const int n = std::sscanf(f.tile.c_str(), "%d%c%d%c", &w, &x, &h, &extra);
    if (n == 1) h = w;
    else if (!(n == 3 && (x == 'x' || x == 'X'))) w = 0;
    if (w < 1 || h < 1 || w > 1 << 20 || h > 1 << 20)
      throw Error(ErrorKind::InvalidArgument, fmt::format("--tile '{}': expected N or WxH with positive sizes", f.tile));
    o.schedule.tile_width = w;
    o.schedule.tile_height = h;
  }
  if (f.streams < 0 || f.streams > 64) throw Error(ErrorKind::InvalidArgument, "--streams must be between 1 and 64");
  o.schedule.streams_per_device = f.streams;
  o.faults.rate = f.fault_rate;
  return o;
}

Progress::Progress(std::string label) : label_(std::move(label)), tty_(::isatty(STDERR_FILENO) != 0) {}
Progress::~Progress() { finish(); }

void Progress::update(double fraction, const std::string& detail) {
  if (!tty_ || fraction - last_ < 0.005) return;
  last_ = fraction;
  const int width = 30, filled = static_cast<int>(fraction * width + 0.5);
  std::fprintf(stderr, "\r%s [%s%s] %3d%% %s\033[K", label_.c_str(), std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), static_cast<int>(fraction * 100 + 0.5), detail.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void Progress::finish() {
  if (shown_) std::fprintf(stderr, "\r\033[K");
  shown_ = false;
}

}  // namespace tf::cli
