#include "device_hub.hpp"

#include <algorithm>
#include <thread>

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

DeviceSelection DeviceHub::select(const std::string& spec) {
  std::lock_guard lock(mutex_);
  auto it = selections_.find(spec);
  if (it != selections_.end()) return it->second;
  DeviceSelection sel = select_devices(spec);
  selections_.emplace(spec, sel);
  return sel;
}

}  // namespace tf::gui
