// The application's view of the devices: GPUs discovered once, device selections cached by spec (so
// the panel sees the same Device objects every job uses), and one lock that lets a single job at a
// time use the devices — the preview, Apply, batch and the speedup demo all take it, because a
// device's per-job state (taps, buffers) belongs to one job at a time.
//
// Discovery runs on a thread of its own and nothing waits for it (docs/design.md, "Start-up"): until
// it has finished there are no GPUs, jobs that would take every GPU run on the CPU workers (the same
// bits: docs/design.md, contract 2), and discovery_finished() tells the widgets when the GPUs are there.
#pragma once
#include <QObject>
#include <QString>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tilefilter/engine/device.hpp"

namespace tf::gui {

class DeviceHub : public QObject {
  Q_OBJECT
 public:
  static DeviceHub& instance();

  // Starts GPU discovery on a thread of its own, so that it overlaps what the application does
  // meanwhile (Qt's start-up, the window, the first previews).
  void start_discovery();
  // Whether discovery has finished; never waits.
  bool gpus_ready() const { return ready_; }
  // Every GPU the backend found, none while discovery is under way, and why there are none. Without
  // start_discovery() the first call discovers (tests, tools).
  std::vector<DevicePtr> gpus();
  QString gpu_message();
  int cpu_cores() const;

  // select_devices(spec), remembered per spec. Throws tf::Error for bad or unavailable selections.
  // While discovery is under way, a spec that takes whatever GPUs there are ("all", "gpu") gets the
  // CPU workers, and one that names GPUs by number waits for discovery.
  DeviceSelection select(const std::string& spec);

  std::mutex& job_mutex() { return job_mutex_; }
  // Forgets the discovered GPUs and the cached selections, so the next use discovers again (tests
  // install a GPU provider of their own).
  void forget_devices();

  // Memory for images that devices will read or write: page-locked once discovery found a GPU
  // (pageable uploads are about 7x slower), ordinary memory before that and without a GPU.
  static const PixelAllocator& host_allocator();
  // `image` in such memory (a copy when it is not; the same image before discovery has finished or
  // when there is no GPU: GPU jobs read ordinary memory too, only slower).
  static Image in_host_memory(Image image);

 signals:
  // Discovery has finished (gpus() and gpu_message() say what it found); emitted on its thread.
  void discovery_finished();

 private:
  DeviceHub() = default;
  std::optional<unsigned> claim_discovery();  // the generation to discover for, unless started already
  void discover_unless_started();             // without start_discovery(), the first use discovers
  void finish_discovery(unsigned generation, GpuDiscovery found);

  std::mutex mutex_;
  std::condition_variable ready_cv_;
  bool started_ = false;
  std::atomic<bool> ready_{false};
  unsigned generation_ = 0;  // forget_devices() counts up: a discovery started before it is dropped
  GpuDiscovery gpus_;
  std::map<std::string, DeviceSelection> selections_;
  std::mutex job_mutex_;
};

}  // namespace tf::gui
