// The application's view of the devices: GPUs discovered once, device selections cached by spec (so
// the panel sees the same Device objects every job uses), and one lock that lets a single job at a
// time use the devices — the preview, Apply, batch and the speedup demo all take it, because a
// device's per-job state (taps, buffers) belongs to one job at a time.
#pragma once
#include <QString>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tilefilter/engine/device.hpp"

namespace tf::gui {

class DeviceHub {
 public:
  static DeviceHub& instance();

  // Starts GPU discovery on a thread of its own, so that it overlaps what the application does
  // meanwhile (Qt's start-up, the window); the first use waits for what is left of it.
  void start_discovery();
  // Every GPU the backend found (discovered on first use) and why there are none.
  const std::vector<DevicePtr>& gpus();
  QString gpu_message();
  int cpu_cores() const;

  // select_devices(spec), remembered per spec. Throws tf::Error for bad or unavailable selections.
  DeviceSelection select(const std::string& spec);

  std::mutex& job_mutex() { return job_mutex_; }
  // Forgets the discovered GPUs and the cached selections, so the next use discovers again (tests
  // install a GPU provider of their own).
  void forget_devices();

  // Memory for images that devices will read or write: page-locked when there is a GPU (pageable
  // uploads are about 7x slower), ordinary memory otherwise.
  static const PixelAllocator& host_allocator();
  // `image` in such memory (a copy when it is not; the same image when there is no GPU).
  static Image in_host_memory(Image image);

 private:
  DeviceHub() = default;
  void discover();
  std::mutex mutex_;
  bool discovered_ = false;
  GpuDiscovery gpus_;
  std::map<std::string, DeviceSelection> selections_;
  std::mutex job_mutex_;
};

}  // namespace tf::gui
