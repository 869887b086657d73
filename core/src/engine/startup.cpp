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
#include <numeric>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tf {

namespace {

// Per hardware thread: a Gaussian of sigma 1.5 (22 taps a channel) ran 446 Mpix of RGBA8 a
// CPU-second on the 2-core VM (3.9e10 multiply-adds; docs/performance.md), taken at half for other
// kernels and machines. 1000 photos of 12 Mpix were decoded, filtered (sigma 1.5) and encoded at
// 34.7 Mpix/s a thread on a 4xH100 host's 64 threads, 200 at about 37 on a 2xH100 host's 32
// (2026-11-26, --devices cpu --codec cpu): the codecs' share, 40 Mpix/s, with the filter's above.
constexpr double kCpuFmasPerSecond = 2e10;
constexpr double kCpuCodecPixelsPerSecond = 40e6;
// Starting GPUs (4xH200 hosts, 64 cores, 2026-11-28; docs/performance.md, "Photo batch"): the driver
// ready about 0.85 s into the process, four contexts at once done at 1.33 s. With fewer GPUs the CLI's
// driver starts only those (start_only_named_gpus: 0.19 s for one, 0.29 for two, 0.42 for three), which
// this model does not count: its GPU times for one or two are about 0.4 s high, but so are its CPU times
// (kCpuCodecPixelsPerSecond), and its choices are the measured ones (200 and 500 photos on the CPU, 1000
// and 2000 on two GPUs; 4xH200, 64 cores, 2026-11-28, docs/performance.md "Start-up").
constexpr double kDriverStartS = 0.75;
constexpr double kContextS = 0.15;
// nvJPEG's handles and states come up one GPU after another, even across processes: the first GPU's
// codec lane was ready 0.68-0.80 s into the batch, the later ones 0.26-0.62 s apart. A lane's first
// files come out about two batches later.
constexpr double kGpuCodecFirstS = 0.75;
constexpr double kGpuCodecStartS = 0.4;  // each later GPU's, in turn
constexpr double kGpuCodecRampS = 0.15;
// A process that started GPUs takes longer to end (the driver tears them down after the last file):
// 0.41 s from _Exit to the end with one H200 and its codec lane, 0.87 s with four.
constexpr double kGpuExitS = 0.15;       // a GPU's
constexpr double kGpuCodecExitS = 0.26;  // nvJPEG's, once
// What a GPU then does a second: 2000 photos of 12 Mpix (sigma 1.5, JPEG out) went through one H200's
// codec lane at 6.8-7.4 Gpix/s once it was ready, each of two at 5.6-6.4: a tenth less a GPU beside
// it. Filters from host memory, 5.9 Gpix/s pageable on one H200 (docs/performance.md).
constexpr double kGpuCodecPixelsPerSecond = 6.5e9;
constexpr double kGpuCodecLossPerGpu = 0.1;
constexpr double kGpuPixelsPerSecond = 5e9;

// Seconds from the GPUs' start until `pixels` are done with the first `k` GPUs' codec lanes joining one
// after another, the CPU codecs (`cpu_rate`) working until the first lane is ready (--codec auto).
double with_gpu_codecs(double pixels, double cpu_rate, int k) {
  if (pixels <= 0) return 0;
  double t = kGpuCodecFirstS;
  double done = cpu_rate * t;
  if (done >= pixels) return pixels / cpu_rate;
  const double a_gpu = kGpuCodecPixelsPerSecond * std::max(0.1, 1.0 - kGpuCodecLossPerGpu * (k - 1));
  for (int j = 1; j <= k; ++j) {  // lane j - 1 works from its start and ramp; j lanes work until the next's
    t = std::max(t, kGpuCodecFirstS + kGpuCodecStartS * (j - 1) + kGpuCodecRampS);
    const double next = j < k ? kGpuCodecFirstS + kGpuCodecStartS * j + kGpuCodecRampS : 1e30;
    const double rate = a_gpu * j;
    if (done + rate * (next - t) >= pixels) return t + (pixels - done) / rate;
    done += rate * (next - t);
    t = next;
  }
  return t;
}

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

namespace {
std::atomic<bool> only_named{false}, narrowed{false};
}  // namespace

void start_only_named_gpus() { only_named = true; }

std::vector<int> gpus_made_visible(const std::vector<int>& named) {
  std::vector<int> ordinals = named;
  std::sort(ordinals.begin(), ordinals.end());
  ordinals.erase(std::unique(ordinals.begin(), ordinals.end()), ordinals.end());
  return ordinals;
}

std::string visible_gpus_for(const std::vector<int>& named) {
  return fmt::format("{}", fmt::join(gpus_made_visible(named), ","));
}

int first_gpus_kept(const std::string& visible) {
  const int n = 1 + static_cast<int>(std::count(visible.begin(), visible.end(), ','));
  std::vector<int> first(static_cast<std::size_t>(n));
  std::iota(first.begin(), first.end(), 0);
  return visible == visible_gpus_for(first) ? n : -1;
}

bool narrow_visible_gpus(const std::vector<int>& named) {
  // One chance, taken by the first discovery whatever it names: only one caller gets past the exchange.
  if (!only_named.exchange(false) || named.empty() || std::getenv("CUDA_VISIBLE_DEVICES")) return false;
  if (::setenv("CUDA_VISIBLE_DEVICES", visible_gpus_for(named).c_str(), 1) != 0) return false;
  narrowed = true;
  return true;
}

bool visible_gpus_narrowed() { return narrowed.load(); }

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
  c.gpus = n;
  if (work.gpu_codecs) {
    // As many of the GPUs as end the process soonest: each adds its context and teardown, and joins
    // later than the one before it.
    const double cpu_rate = c.cpu_s > 0 ? work.pixels / c.cpu_s : 0.0;
    c.gpu_s = 1e30;
    for (int k = 1; k <= n; ++k) {
      const double start = kDriverStartS + kContextS * k;
      const double s = start + with_gpu_codecs(work.pixels, cpu_rate, k) + kGpuExitS * k + kGpuCodecExitS;
      if (k == n) c.all_gpus_s = s;
      if (s < c.gpu_s) {
        c.gpu_s = s;
        c.gpus = k;
        c.gpu_start_s = start + kGpuCodecFirstS + kGpuCodecStartS * (k - 1) / 2.0;
      }
    }
  } else {
    // The GPUs filter while the CPU threads decode and encode.
    c.gpu_start_s = kDriverStartS + kContextS * n;
    c.gpu_s = c.gpu_start_s + std::max(work.pixels / (kGpuPixelsPerSecond * n), codec_s) + kGpuExitS * n;
    c.all_gpus_s = c.gpu_s;
  }
  // Without a GPU the driver shows, discovery itself finds none (and says why): nothing to save.
  c.cpu_only = gpus > 0 && c.cpu_s <= c.gpu_s;
  if (gpus == 0) {
    c.reason = "no GPU visible to the driver";
  } else if (c.cpu_only) {
    c.reason = fmt::format(
        "CPU workers only: the work takes about {:.2f} s on {} cores, no more than the {:.2f} s with {} GPU{} (they "
        "start in about {:.2f} s and the process ends later by their teardown)",
        c.cpu_s, cores, c.gpu_s, c.gpus, c.gpus == 1 ? "" : "s", c.gpu_start_s);
  } else if (c.gpus < gpus) {
    c.reason = fmt::format(
        "{} of the {} GPUs: the work takes about {:.2f} s with {}, {:.2f} s with all {} (nvJPEG starts on one GPU "
        "after another, and each GPU adds its start-up and teardown to the process)",
        c.gpus, gpus, c.gpu_s, c.gpus, c.all_gpus_s, gpus);
  } else {
    c.reason = fmt::format(
        "GPUs: the work takes about {:.2f} s on {} cores, more than the {:.2f} s with {} GPU{} (they start in about "
        "{:.2f} s and the process ends later by their teardown)",
        c.cpu_s, cores, c.gpu_s, gpus, gpus == 1 ? "" : "s", c.gpu_start_s);
  }
  return c;
}

}  // namespace tf
