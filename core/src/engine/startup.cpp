#include "tilefilter/engine/startup.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

namespace tf {

namespace {

// Per hardware thread: a Gaussian of sigma 1.5 (22 taps a channel) ran 446 Mpix of RGBA8 a
// CPU-second on the 2-core VM (3.9e10 multiply-adds; docs/performance.md), taken at half for other
// kernels and machines. 1000 photos of 12 Mpix were decoded, filtered (sigma 1.5) and encoded at
// 34.7 Mpix/s a thread on a 4xH100 host's 64 threads, 200 at about 37 on a 2xH100 host's 32
// (2026-11-26, --devices cpu --codec cpu): the codecs' share, 40 Mpix/s, with the filter's above.
constexpr double kCpuFmasPerSecond = 2e10;
constexpr double kCpuCodecPixelsPerSecond = 40e6;
// Starting GPUs (4 H100s, 2026-11-26, `tilefilter startup`: the CUDA runtime alone): the driver took
// 0.52-0.60 s, four contexts 0.42-0.64 s (the driver makes them one at a time). nvJPEG's first handle
// and hardware decoder state then took 0.64 s, each later GPU's 0.2-0.3 s, one GPU after another
// even across processes; the GPUs join the batch in that order.
constexpr double kDriverStartS = 0.6;
constexpr double kContextS = 0.15;
constexpr double kGpuCodecStartS = 0.3;  // a GPU's, in turn
// A process that started GPUs takes longer to end (the driver tears them down after the last file):
// 0.35 s for four bare contexts, 0.6 s for one H100 with nvJPEG's states, 0.9-1.2 s for four.
constexpr double kGpuExitS = 0.1;       // a GPU's
constexpr double kGpuCodecExitS = 0.5;  // nvJPEG's, once
// What a GPU then does a second: 2000 photos of 12 Mpix went through four H100s' codec workers at
// 1.9 Gpix/s a GPU once they were ready, one H100's at 3.2 (--codec gpu, sigma 1.5, 2026-11-26),
// taken at 1.2; filters from host memory, 5.9 Gpix/s pageable on one H200 (docs/performance.md).
constexpr double kGpuCodecPixelsPerSecond = 1.2e9;
constexpr double kGpuPixelsPerSecond = 5e9;

double process_start_seconds_ago() {
  // Field 22 of /proc/self/stat: the start time in clock ticks after boot; /proc/uptime: now.
  std::ifstream stat("/proc/self/stat"), up("/proc/uptime");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  double uptime = 0;
  const auto close = text.rfind(')');
  if (close == std::string::npos || !(up >> uptime)) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) return std::max(0.0, uptime - std::strtod(field.c_str(), nullptr) / sysconf(_SC_CLK_TCK));
  return 0;
}

struct Origin {
  std::chrono::steady_clock::time_point zero;
  Origin() {
    const double ago = process_start_seconds_ago();
    zero = std::chrono::steady_clock::now() -
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(ago));
  }
};

std::mutex& steps_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::vector<StartupStep>& steps() {
  static auto* s = new std::vector<StartupStep>;
  return *s;
}

// Made at static initialization, so that the process's own start is read once and early.
const Origin& origin() {
  static const Origin o;
  return o;
}
[[maybe_unused]] const Origin& early_origin = origin();

}  // namespace

double process_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin().zero).count();
}

void record_startup_step(std::string what, double t0, double t1) {
  std::lock_guard lock(steps_mutex());
  steps().push_back({std::move(what), t0, t1});
}

std::vector<StartupStep> startup_steps() {
  std::lock_guard lock(steps_mutex());
  return steps();
}

namespace {
std::atomic<bool> keeping{false};
}  // namespace

void keep_gpu_resources_until_exit() { keeping = true; }
bool keeping_gpu_resources_until_exit() { return keeping.load(); }

void keep_until_exit(std::shared_ptr<void> what) {
  static auto* mutex = new std::mutex;
  static auto* kept = new std::vector<std::shared_ptr<void>>;  // never destroyed: the process's end frees it
  std::lock_guard lock(*mutex);
  kept->push_back(std::move(what));
}

int gpus_visible_without_cuda() {
  namespace fs = std::filesystem;
  // A container shows the GPUs it may use as /dev/nvidiaN (CUDA needs them), while its
  // /proc/driver/nvidia/gpus may be empty (seen on the H100 machines): the device files first.
  int found = 0;
  std::error_code ec;
  for (int i = 0; i < 64; ++i)
    if (fs::exists(fmt::format("/dev/nvidia{}", i), ec)) ++found;
  if (found == 0 && fs::is_directory("/proc/driver/nvidia/gpus", ec))
    for (auto it = fs::directory_iterator("/proc/driver/nvidia/gpus", ec); !ec && it != fs::directory_iterator();
         it.increment(ec))
      ++found;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    const std::string v(visible);
    if (v.empty()) return 0;
    found = std::min<int>(found, 1 + static_cast<int>(std::count(v.begin(), v.end(), ',')));
  }
  return found;
}

long long chain_fmas_per_pixel(const Chain& chain) {
  long long n = 0;
  for (const auto& stage : chain)
    for (const auto& c : stage.convs)
      n += c.separable ? static_cast<long long>(c.row.size() + c.col.size())
                       : static_cast<long long>(c.kernel.taps.size());
  return n;
}

StartupChoice choose_cpu_for_small_work(const WorkEstimate& work, int cores, int gpus) {
  StartupChoice c;
  cores = std::max(1, cores);
  const double fmas = work.pixels * std::max(1, work.channels) * static_cast<double>(std::max(1LL, work.fmas));
  const double codec_s = work.codec_pixels / kCpuCodecPixelsPerSecond / cores;
  c.cpu_s = fmas / kCpuFmasPerSecond / cores + codec_s;
  const int n = std::max(1, gpus);
  // The GPUs join one after another: on average this long after the process started.
  const double codec_start = work.gpu_codecs ? kGpuCodecStartS * (n + 1) / 2.0 : 0.0;
  c.gpu_start_s = kDriverStartS + kContextS * n + codec_start;
  const double gpu_rate = (work.gpu_codecs ? kGpuCodecPixelsPerSecond : kGpuPixelsPerSecond) * n;
  double with_gpus = 0;
  if (work.gpu_codecs) {
    // The CPU codecs work from the start (--codec auto) and share what is left once the GPUs join.
    const double cpu_rate = c.cpu_s > 0 ? work.pixels / c.cpu_s : 0.0;
    const double left = std::max(0.0, work.pixels - cpu_rate * c.gpu_start_s);
    with_gpus = c.gpu_start_s + left / (cpu_rate + gpu_rate);
  } else {
    // The GPUs filter while the CPU threads decode and encode.
    with_gpus = c.gpu_start_s + std::max(work.pixels / gpu_rate, codec_s);
  }
  c.gpu_s = with_gpus + kGpuExitS * n + (work.gpu_codecs ? kGpuCodecExitS : 0.0);
  // Without a GPU the driver shows, discovery itself finds none (and says why): nothing to save.
  c.cpu_only = gpus > 0 && c.cpu_s <= c.gpu_s;
  if (gpus == 0) {
    c.reason = "no GPU visible to the driver";
  } else {
    c.reason = fmt::format(
        "{}: the work takes about {:.2f} s on {} cores, {} the {:.2f} s with {} GPU{} (they start in about {:.2f} s "
        "and the process ends later by their teardown)",
        c.cpu_only ? "CPU workers only" : "GPUs", c.cpu_s, cores, c.cpu_only ? "no more than" : "more than", c.gpu_s,
        gpus, gpus == 1 ? "" : "s", c.gpu_start_s);
  }
  return c;
}

}  // namespace tf
