#include "device_hub.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include "recycling_allocator.hpp"
#include "tilefilter/cuda_backend.hpp"

namespace tf::gui {

DeviceHub& DeviceHub::instance() {
  static DeviceHub hub;
  return hub;
}

void DeviceHub::discover() {
  if (discovered_) return;
  gpus_ = discover_gpus();
  discovered_ = true;
}

void DeviceHub::start_discovery() {
  std::thread([this] {
    std::lock_guard lock(mutex_);
    discover();
  }).detach();
}

void DeviceHub::forget_devices() {
  std::lock_guard lock(mutex_);
  discovered_ = false;
  gpus_ = {};
  selections_.clear();
}

const std::vector<DevicePtr>& DeviceHub::gpus() {
  std::lock_guard lock(mutex_);
  discover();
  return gpus_.gpus;
}

QString DeviceHub::gpu_message() {
  std::lock_guard lock(mutex_);
  discover();
  return QString::fromStdString(gpus_.message);
}

int DeviceHub::cpu_cores() const { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

const PixelAllocator& DeviceHub::host_allocator() {
  // Up to 512 MiB of freed buffers wait for the next image of their size (the next preview).
  static RecyclingAllocator* recycling = [] {
    const PixelAllocator* pinned = instance().gpus().empty() ? nullptr : cuda::pinned_allocator();
    return new RecyclingAllocator(pinned ? *pinned : default_allocator(),
                                  std::size_t{512} << 20);  // lives as long as images may
  }();
  return recycling->allocator();
}

Image DeviceHub::in_host_memory(Image image) {
  if (image.empty() || instance().gpus().empty()) return image;  // ordinary memory is what a CPU job wants
  const PixelAllocator& alloc = host_allocator();
  Image out(image.width(), image.height(), image.format(), alloc);
  for (int y = 0; y < image.height(); ++y)
    std::memcpy(out.view().row(y), image.view().row(y), image.view().row_bytes());
  return out;
}

DeviceSelection DeviceHub::select(const std::string& spec) {
  std::lock_guard lock(mutex_);
  auto it = selections_.find(spec);
  if (it != selections_.end()) return it->second;
  DeviceSelection sel = select_devices(spec);
  selections_.emplace(spec, sel);
  return sel;
}

}  // namespace tf::gui
