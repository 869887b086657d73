#include "device_hub.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <thread>

#include "recycling_allocator.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf::gui {

namespace {

constexpr std::size_t kKeptBytes = std::size_t{512} << 20;

}  // namespace

DeviceHub& DeviceHub::instance() {
  // Never destroyed: the discovery thread may still be running when the process exits.
  static auto* hub = new DeviceHub;
  return *hub;
}

std::optional<unsigned> DeviceHub::claim_discovery() {
  std::lock_guard lock(mutex_);
  if (started_) return std::nullopt;
  started_ = true;
  return generation_;
}

void DeviceHub::finish_discovery(unsigned generation, GpuDiscovery found) {
  {
    std::lock_guard lock(mutex_);
    if (generation != generation_) return;  // forget_devices() came meanwhile
    gpus_ = std::move(found);
    ready_ = true;
  }
  ready_cv_.notify_all();
  emit discovery_finished();
}

void DeviceHub::start_discovery() {
  if (const auto generation = claim_discovery())
    std::thread([this, g = *generation] { finish_discovery(g, discover_gpus()); }).detach();
}

void DeviceHub::discover_unless_started() {
  if (const auto generation = claim_discovery()) finish_discovery(*generation, discover_gpus());
}

void DeviceHub::forget_devices() {
  {
    std::lock_guard lock(mutex_);
    ++generation_;
    started_ = false;
    ready_ = false;
    gpus_ = {};
    selections_.clear();
  }
  ready_cv_.notify_all();  // a select() waiting for the discovery it dropped selects on its own
}

std::vector<DevicePtr> DeviceHub::gpus() {
  discover_unless_started();
  std::lock_guard lock(mutex_);
  return gpus_.gpus;
}

QString DeviceHub::gpu_message() {
  discover_unless_started();
  std::lock_guard lock(mutex_);
  return ready_ ? QString::fromStdString(gpus_.message) : tr("the GPUs are still starting");
}

int DeviceHub::cpu_cores() const { return default_threads(); }

const PixelAllocator& DeviceHub::host_allocator() {
  // Up to 512 MiB of freed buffers wait for the next image of their size (the next preview). The
  // pools live as long as images may. Decided at each call: the GPUs may come after the first images.
  static auto* ordinary = new RecyclingAllocator(default_allocator(), kKeptBytes);
  auto& hub = instance();
  if (!hub.gpus_ready() || hub.gpus().empty()) return ordinary->allocator();
  static auto* pinned = [] {
    const PixelAllocator* p = cuda::pinned_allocator();
    if (p) ordinary->keep_at_most(0);  // images made before the GPUs came are not made again
    return new RecyclingAllocator(p ? *p : default_allocator(), kKeptBytes);
  }();
  return pinned->allocator();
}

Image DeviceHub::in_host_memory(Image image) {
  auto& hub = instance();
  // Before discovery has finished the image stays where it is: no load waits for the GPUs.
  if (image.empty() || !hub.gpus_ready() || hub.gpus().empty()) return image;
  const PixelAllocator& alloc = host_allocator();
  Image out(image.width(), image.height(), image.format(), alloc);
  for (int y = 0; y < image.height(); ++y)
    std::memcpy(out.view().row(y), image.view().row(y), image.view().row_bytes());
  return out;
}

DeviceSelection DeviceHub::select(const std::string& spec) {
  std::string key = spec;
  std::string note;
  std::optional<GpuDiscovery> discovered;
  using GpuUse = DeviceSpec::GpuUse;
  const GpuUse use = parse_device_spec(spec).gpu_use();  // a bad spec throws here, before any waiting
  if (use != GpuUse::None) discover_unless_started();    // without start_discovery(): here, once
  {
    std::unique_lock lock(mutex_);
    if (started_ && !ready_) {
      if (use == GpuUse::Named) {
        const unsigned generation = generation_;
        ready_cv_.wait(lock, [&] { return ready_ || generation_ != generation; });
      } else if (use == GpuUse::Any) {
        key = "cpu";  // the GPUs' bits (docs/design.md, contract 2), without waiting for them
        note = "the GPUs are still starting: the CPU workers took this job";
      }
    }
    if (auto it = selections_.find(key); it != selections_.end()) {
      DeviceSelection sel = it->second;
      if (!note.empty()) sel.note = note;
      return sel;
    }
    // Once discovered, every selection is made from the hub's own GPUs, never a second set from the
    // provider (each device would set up its streams and buffers again).
    if (ready_) discovered = gpus_;
  }
  // Outside the lock: select_devices may ask the GPU provider, and gpus() must not wait for that.
  DeviceSelection made = discovered ? select_devices(key, *discovered) : select_devices(key);
  std::unique_lock lock(mutex_);
  DeviceSelection sel = selections_.try_emplace(key, std::move(made)).first->second;  // one made meanwhile wins
  lock.unlock();
  if (!note.empty()) sel.note = note;
  return sel;
}

}  // namespace tf::gui
