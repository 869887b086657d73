#include "options.hpp"

#include <unistd.h>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "tilefilter/engine/job_settings.hpp"
#include "tilefilter/engine/startup.hpp"
#include "tilefilter/filters/preset.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cli {

void add_job_flags(CLI::App& cmd, JobFlags& f) {
  cmd.add_option("-f,--filter", f.filters,
                 "filter SPEC: name or name:key=value,... (repeat to chain; see `tilefilter filters`)")
      ->required();
  f.border_flag =
      cmd.add_option("--border", f.border, fmt::format("border mode: {}", border_mode_names()))->capture_default_str();
  f.border_value_flag =
      cmd.add_option("--border-value", f.border_value, "value outside the image for --border constant")
          ->capture_default_str();
  cmd.add_option("--devices", f.devices, "all | gpu | cpu | cpu:N | GPU ordinals like 0,1 | mixes like 0,cpu:2")
      ->capture_default_str();
  cmd.add_option("--tile", f.tile, "tile size N or WxH in pixels (default: chosen from device memory)");
  cmd.add_option("--streams", f.streams, "CUDA streams per GPU (default: chosen by the backend)");
  cmd.add_flag("--exact", f.exact,
               "direct convolution only: large 2-D kernels skip the FFT path, FFTW and cuFFT (bit-identical on every "
               "backend and tiling, slower)");
  cmd.add_option("--device-memory", f.device_memory, "cap on memory used per GPU, e.g. 512M (default: free memory)")
      ->transform(size_value());
  cmd.add_option("--pixel-limit", f.pixel_limit, "refuse images decoded whole with more pixels than this")
      ->capture_default_str();
  cmd.add_option("--stream-pixel-limit", f.stream_pixel_limit,
                 "refuse TIFF/PNG/JPEG images read band by band with more pixels than this")
      ->capture_default_str();
  cmd.add_flag("-v,--verbose", f.verbose,
               "print the start-up steps on stderr: from the process's start to the CUDA driver, each GPU's "
               "context and buffers, the codecs, the first result");
  cmd.add_option("--inject-faults", f.fault_rate, "testing: probability that a GPU tile attempt fails")->group("");
}

namespace {

// Replaces a size such as "1.5G" by its whole count ("1610612736"); returns the error, or nothing.
std::string to_whole_count(std::string& text) {
  const char* first = text.data();
  const char* last = first + text.size();
  while (first < last && std::isspace(static_cast<unsigned char>(*first))) ++first;
  double number = 0;
  const auto [end, ec] = std::from_chars(first, last, number);
  std::string unit(end, last);
  std::erase_if(unit, [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'b') unit.pop_back();  // "MB", "MiB"
  if (unit.size() == 2 && unit.back() == 'i') unit.pop_back();
  const std::string units = "kmgt";
  const std::size_t at = unit.size() == 1 ? units.find(unit[0]) : std::string::npos;
  const bool known = unit.empty() || unit == "b" || at != std::string::npos;
  const double count = number * std::pow(1024.0, at == std::string::npos ? 0.0 : static_cast<double>(at + 1));
  if (ec != std::errc{} || end == first || !known || !(count >= 0) || count > 9.0e18)
    return fmt::format("'{}' is not a size such as 512M, 1.5G or 2GiB", text);
  text = std::to_string(std::llround(count));
  return {};
}

}  // namespace

CLI::Validator size_value() { return CLI::Validator(to_whole_count, "SIZE", "size"); }

void print_startup_steps() {
  for (const auto& s : startup_steps())
    fmt::print(stderr, "[startup] {:7.3f} s .. {:7.3f} s  {}\n", s.t0, s.t1, s.what);
  fmt::print(stderr, "[startup] {:7.3f} s  now\n", process_seconds());
}

void add_jpeg_flags(CLI::App& cmd, int& quality, std::string& subsampling) {
  cmd.add_option("--quality", quality,
                 fmt::format("JPEG/WebP quality 1-100 (default: a JPEG input's, estimated from its quantisation "
                             "tables; {} for other inputs)",
                             kDefaultQuality))
      ->check(CLI::Range(1, 100));
  cmd.add_option("--subsampling", subsampling,
                 "JPEG chroma subsampling: 444, 422 or 420 (default: a JPEG input's; else 444 from quality 90, "
                 "420 below)")
      ->check(CLI::IsMember({"444", "422", "420", "4:4:4", "4:2:2", "4:2:0"}));
}

void add_write_flags(CLI::App& cmd, WriteFlags& f) {
  add_jpeg_flags(cmd, f.quality, f.subsampling);
  cmd.add_option("--compression", f.compression,
                 "TIFF: none, deflate, lzw, zstd, packbits or jpeg, optionally with a level (deflate:9) or a JPEG "
                 "quality (jpeg:90, else --quality); PNG: zlib level 0-9 (default: TIFF keeps the input's "
                 "compression, or deflate where the output cannot hold it, else deflate; PNG libpng's default)");
  cmd.add_flag("--bigtiff", f.bigtiff, "write BigTIFF (automatic when the TIFF would pass 4 GB)");
  cmd.add_option("--tiff-tile", f.tiff_tile, "write a tiled TIFF with WxH tiles (multiples of 16), e.g. 256x256");
  cmd.add_flag("--tiff-pyramid", f.tiff_pyramid,
               "TIFF: add reduced-resolution pages, each half the one before, down to one tile (tiled: "
               "256x256 unless --tiff-tile); viewers and tilefilter-gui open the image from them");
  cmd.add_flag("--strip", f.strip, "drop EXIF, ICC profile and XMP (copied to the output by default)");
}

void add_preset_flag(CLI::App& cmd, JobFlags& f) {
  cmd.add_option("--preset", f.preset,
                 "a filter preset: a JSON file as tilefilter-gui saves it, or the name of a bundled one "
                 "(soft-focus, edges, ...); its chain, then any --filter; its border unless --border is given");
  cmd.get_option("--filter")->required(false);
}

std::string bundled_folder(const std::string& what) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path installed = exe.parent_path() / ".." / "share" / "tilefilter" / what;
  if (!ec && std::filesystem::is_directory(installed, ec)) return std::filesystem::canonical(installed, ec).string();
#ifdef TF_SOURCE_RESOURCES
  const std::filesystem::path source = std::filesystem::path(TF_SOURCE_RESOURCES) / what;
  if (std::filesystem::is_directory(source, ec)) return source.string();
#endif
  return {};
}

JobFlags with_preset(const JobFlags& f) {
  if (f.preset.empty()) return f;
  const Preset preset = load_preset(find_preset(f.preset, bundled_folder("presets")));
  JobFlags out = f;
  out.filters = to_specs(preset.chain.filters);
  out.filters.insert(out.filters.end(), f.filters.begin(), f.filters.end());
  if (!f.border_flag || f.border_flag->count() == 0) {
    out.border = to_string(preset.chain.border.mode);
    if (!f.border_value_flag || f.border_value_flag->count() == 0) out.border_value = preset.chain.border.value;
  }
  return out;
}

TileSize parse_size(const std::string& text, const std::string& flag) {
  int w = 0, h = 0;
  char x = 0, extra = 0;
  const int n = std::sscanf(text.c_str(), "%d%c%d%c", &w, &x, &h, &extra);
  if (n == 1) h = w;
  else if (!(n == 3 && (x == 'x' || x == 'X'))) w = 0;
  if (w < 1 || h < 1 || w > 1 << 20 || h > 1 << 20)
    throw Error(ErrorKind::InvalidArgument, fmt::format("{} '{}': expected N or WxH with positive sizes", flag, text));
  return {w, h};
}

WriteOptions write_options(const WriteFlags& f) {
  WriteOptions o;
  o.quality = f.quality;
  if (!f.subsampling.empty()) o.subsampling = parse_subsampling(f.subsampling);
  o.bigtiff = f.bigtiff;
  o.strip = f.strip;
  o.tiff_pyramid = f.tiff_pyramid;
  if (!f.tiff_tile.empty()) o.tiff_tile = parse_size(f.tiff_tile, "--tiff-tile");
  parse_compression(f.compression, o);
  return o;
}

JobOptions job_options(const JobFlags& f) {
  JobSettings settings;
  settings.border = f.border;
  settings.border_value = f.border_value;
  if (!f.tile.empty()) settings.tile = parse_size(f.tile, "--tile");
  settings.streams = f.streams;
  settings.exact = f.exact;
  JobOptions o = make_job_options(settings);
  o.faults.rate = f.fault_rate;
  return o;
}

Progress::Progress(std::string label) : label_(std::move(label)), tty_(::isatty(STDERR_FILENO) != 0) {}
Progress::~Progress() { finish(); }

void Progress::update(double fraction, const std::string& detail) {
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (start_s_ == 0) start_s_ = now;
  if (!tty_ || fraction - last_ < 0.005) return;
  last_ = fraction;
  std::string text = detail;
  if (eta_ && fraction > 0.01 && fraction < 1) {
    const double left = (now - start_s_) * (1 - fraction) / fraction;
    text +=
        fmt::format("{}{:.0f}:{:02.0f} left", text.empty() ? "" : ", ", std::floor(left / 60), std::fmod(left, 60.0));
  }
  const int width = 30, filled = static_cast<int>(fraction * width + 0.5);
  std::fprintf(stderr, "\r%s [%s%s] %3d%% %s\033[K", label_.c_str(), std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), static_cast<int>(fraction * 100 + 0.5), text.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void Progress::finish() {
  if (shown_) std::fprintf(stderr, "\r\033[K");
  shown_ = false;
}

}  // namespace tf::cli
