// Device selection, in one place for every front end (the CLI, the C API, the GUI, Python through the
// C API): what a device spec means, GPU discovery (the CUDA backend installs a provider), what a spec
// selects, and when an image already on a GPU is spread over several.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tilefilter/filters/filter.hpp"
#include "tilefilter/image/image.hpp"

namespace tf {

class Device;
using DevicePtr = std::shared_ptr<Device>;

// A device spec read once: "all" (every GPU, else the CPU), "gpu" (every GPU), "cpu" (one worker per
// core), "cpu:N", a GPU ordinal, and lists of them ("0,cpu:2"); "" reads as "all".
struct DeviceSpec {
  enum class Kind { All, Gpu, Cpu, CpuCount, Ordinal };
  struct Item {
    Kind kind = Kind::All;
    int number = 0;  // N of cpu:N, or the ordinal
  };
  // How a spec takes GPUs: not at all ("cpu", "cpu:4"), whatever there are ("all", "gpu"), or by
  // number ("0,cpu:2"; a number anywhere makes it Named).
  enum class GpuUse { None, Any, Named };

  std::string text;  // as given, "" made "all"
  std::vector<Item> items;

  GpuUse gpu_use() const;
  bool names_cpus() const;  // "cpu" or "cpu:N" among the items
};
// Throws tf::Error (InvalidArgument) naming --devices and the item that is wrong.
DeviceSpec parse_device_spec(const std::string& spec);

// GPU discovery is provided by the CUDA backend (kernels/); without it there are no GPUs.
struct GpuDiscovery {
  std::vector<DevicePtr> gpus;
  std::string message;  // why there are none, when there are none
  int visible = -1;     // GPUs the driver reports, made or not (-1: as many as gpus)
};
// `only`: the ordinals to make a device (context, buffers) for; empty: every GPU. "--devices 0" on a
// shared machine leaves the other GPUs untouched, and the process without their contexts' host memory.
using GpuProvider = std::function<GpuDiscovery(std::size_t memory_cap, const std::vector<int>& only)>;
void set_gpu_provider(GpuProvider provider);

// Device selection: "all" (every GPU, else the CPU), "gpu", "cpu" (one worker per core), "cpu:N",
// "0,1" (GPU ordinals), "0,cpu:2". `memory_cap` limits each GPU's usable memory (0 = free memory).
struct DeviceSelection {
  std::vector<DevicePtr> devices;
  std::string note;  // e.g. "no GPU: CUDA reports no device" when "all" fell back to the CPU
};
DeviceSelection select_devices(const std::string& spec, std::size_t memory_cap = 0);
// The same from GPUs discovered before (a process that keeps its devices: the GUI), with no discovery.
DeviceSelection select_devices(const std::string& spec, const GpuDiscovery& discovered);
GpuDiscovery discover_gpus(std::size_t memory_cap = 0, const std::vector<int>& only = {});
// How many of `devices` are GPUs.
int gpu_count(const std::vector<DevicePtr>& devices);

// Whether an image already in a GPU's memory gains from being spread over every GPU: only where the
// chain's work outweighs the copies between the GPUs (each band is read from and written back to the
// image's GPU) and the image is large enough for that to matter (kSplitMinPixels).
inline constexpr long long kSplitMinPixels = 1LL << 24;
bool worth_splitting(const Chain& chain, const Format& format, long long pixels);
// The GPUs an image on a GPU is spread over under `spec`: every GPU (`gpu_ordinals()`, asked only
// then) where the spec holds "all" or "gpu" and worth_splitting, else none (the image's own GPU
// alone); the ordinals a spec of ordinals names (a list of one: the image's GPU alone too).
// Throws tf::Error (InvalidArgument) for a spec naming CPUs.
std::vector<int> device_image_gpus(const DeviceSpec& spec, const Chain& chain, const Format& format, long long pixels,
                                   const std::function<std::vector<int>()>& gpu_ordinals);

}  // namespace tf
