// Start-up: what a process pays before a GPU can work, recorded as it happens (the report and
// --verbose show it), and the choice to leave the GPUs alone when the work is smaller than that.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tilefilter/filters/filter.hpp"

namespace tf {

// Seconds since this process started (the kernel's start time of the process, /proc/self/stat);
// where that cannot be read, since the first call.
double process_seconds();

// One start-up step: "cuda driver", "gpu1 context", "gpu1 codec lanes", "first file", in process
// seconds. Any thread may add one at any time.
struct StartupStep {
  std::string what;
  double t0 = 0, t1 = 0;
};
void record_startup_step(std::string what, double t0, double t1);
std::vector<StartupStep> startup_steps();  // in the order they ended

// Times one step from construction to destruction (or to done()).
class StartupTimer {
 public:
  explicit StartupTimer(std::string what) : what_(std::move(what)), t0_(process_seconds()) {}
  ~StartupTimer() { done(); }
  StartupTimer(const StartupTimer&) = delete;
  StartupTimer& operator=(const StartupTimer&) = delete;
  void done() {
    if (!what_.empty()) record_startup_step(std::move(what_), t0_, process_seconds());
    what_.clear();
  }

 private:
  std::string what_;
  double t0_;
};

// A program that ends its process with _Exit once its outputs are written (the CLI) calls
// keep_gpu_resources_until_exit() first: GPU devices and codec lanes are then kept to the end
// instead of being torn down one by one (four H100s' codec lanes and buffers took seconds), and the
// driver frees them as the process ends. keep_until_exit() holds what is handed to it for good.
void keep_gpu_resources_until_exit();
bool keeping_gpu_resources_until_exit();
void keep_until_exit(std::shared_ptr<void> what);

// A process that will use no GPU but those its one job names (the CLI's `apply` and `batch`) calls
// start_only_named_gpus() before its devices are chosen: the first discovery of named GPUs then sets
// CUDA_VISIBLE_DEVICES to them before the driver starts, so that the driver starts no other GPU (and tears
// none down at the end). CUDA then numbers them 0, 1, ... in the order of their ordinals; the backend shows
// each by its ordinal on the machine (`--devices 2,3` gives gpu2 and gpu3). The driver took 0.18 / 0.29 /
// 0.77 s to start with one / two / four H200s visible, and 2000 photos on GPUs 0 and 1 took 3.89-3.98 s whole
// with two visible against 4.47-4.86 s with four, in turns (4xH200, 64 cores, 2026-11-28). Nothing is set
// where the user set CUDA_VISIBLE_DEVICES, or in other programs (a library's host process has other CUDA
// users).
void start_only_named_gpus();
// The GPUs `named` by ordinal in the order CUDA numbers them once they alone are visible: sorted, each once.
std::vector<int> gpus_made_visible(const std::vector<int>& named);
// The CUDA_VISIBLE_DEVICES value for GPUs `named` by ordinal: gpus_made_visible joined by commas ("2,3");
// "" when `named` is empty (every GPU).
std::string visible_gpus_for(const std::vector<int>& named);
// How many GPUs a CUDA_VISIBLE_DEVICES value shows with their ordinals unchanged: N for "0,1,..,N-1" (as
// visible_gpus_for writes it for GPUs 0 to N-1, or a user's "0"); -1 for any other value (another order, gaps,
// UUIDs, an empty value), whose numbering only CUDA knows.
int first_gpus_kept(const std::string& visible);
// Called by the GPU backend just before it first starts the driver: sets CUDA_VISIBLE_DEVICES as said
// above where start_only_named_gpus() allows it. True when it did.
bool narrow_visible_gpus(const std::vector<int>& named);
// True when narrow_visible_gpus() set the variable: it is this process's own, not the user's.
bool visible_gpus_narrowed();

// GPUs the NVIDIA driver shows, counted without a CUDA or NVML call (/dev/nvidiaN, else
// /proc/driver/nvidia/gpus): 0 on a machine without one. CUDA_VISIBLE_DEVICES narrows it as CUDA would
// (its count of entries; an empty value hides every GPU).
int gpus_visible_without_cuda();

// Multiply-adds per output pixel and channel for the whole chain (a separable pass costs its row
// plus its column taps): the measure of a chain's work that both backends' costs follow.
long long chain_fmas_per_pixel(const Chain& chain);

// The work a job asks for, as the start-up choice weighs it.
struct WorkEstimate {
  double pixels = 0;        // output pixels filtered
  int channels = 1;         // channels a pixel
  long long fmas = 0;       // chain_fmas_per_pixel
  double codec_pixels = 0;  // pixels the CPU would decode and encode (JPEG photos in batch), 0 for none
  bool gpu_codecs = false;  // with GPUs, JPEGs would go to their codecs (nvJPEG's start-up too)
};

// Whether a job that may use every GPU ("--devices all") runs on the CPU workers alone, and on how
// many of the GPUs, decided before any CUDA call. With the GPUs' JPEG codecs, as many GPUs as end the
// process soonest (the driver, a context a GPU, nvJPEG's start one GPU after another while the CPU
// codecs already work, and the teardown that makes the process end later; measured on 4xH200 hosts);
// without them, every GPU. When the estimated time on `cores` CPU workers is no more than that, the
// GPUs could not finish it sooner. `reason` says what was chosen and why in one line.
struct StartupChoice {
  bool cpu_only = false;
  int gpus = 0;            // the GPUs to use, the first ones (all of them but for the GPU codecs)
  double cpu_s = 0;        // estimated time on the CPU workers
  double gpu_start_s = 0;  // estimated time before the GPUs can work (on average, as they join in turn)
  double gpu_s = 0;        // estimated time with `gpus` GPUs, their start and teardown included
  double all_gpus_s = 0;   // the same with every GPU
  std::string reason;
};
StartupChoice choose_cpu_for_small_work(const WorkEstimate& work, int cores, int gpus);

}  // namespace tf
