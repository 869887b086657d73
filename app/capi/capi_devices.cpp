// The C API's devices: the pool that makes each selection once and lends it to jobs, and
// tf_devices_json.
#include "capi_internal.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tilefilter/cuda_backend.hpp"

namespace tf::capi {

DevicePool::Lease DevicePool::take(const std::string& spec, std::size_t memory_cap) {
  install_once();
  Lease lease;
  lease.pool = this;
  lease.key = fmt::format("{}@{}", spec, memory_cap);
  {
    std::lock_guard lock(mutex_);
    if (auto it = gpu_.find(lease.key); it != gpu_.end()) {
      lease.selection = it->second.selection;
      lease.gpu_lock = std::unique_lock(*it->second.mutex);
      return lease;
    }
    auto& list = free_[lease.key];
    if (!list.empty()) {
      lease.selection = std::move(list.back());
      list.pop_back();
      return lease;
    }
  }
  auto selection = std::make_shared<DeviceSelection>(select_devices(spec, memory_cap));
  if (gpu_count(selection->devices) == 0) {
    lease.selection = std::move(selection);
    return lease;
  }
  std::mutex* gpu_mutex = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto& shared = gpu_[lease.key];
    if (!shared.selection) {
      shared.selection = selection;
      shared.mutex = std::make_unique<std::mutex>();
    }
    lease.selection = shared.selection;
    gpu_mutex = shared.mutex.get();
  }
  lease.gpu_lock = std::unique_lock(*gpu_mutex);
  return lease;
}

void DevicePool::give(const std::string& key, std::shared_ptr<DeviceSelection> selection) {
  std::lock_guard lock(mutex_);
  free_[key].push_back(std::move(selection));
}

// Never destroyed: devices may hold CUDA resources that must not be freed after the runtime exits.
DevicePool& device_pool() {
  static auto* pool = new DevicePool;
  return *pool;
}

const char* devices_of(const tf_options* o) { return o && o->devices && *o->devices ? o->devices : "all"; }
std::size_t memory_of(const tf_options* o) { return o ? o->device_memory : 0; }

}  // namespace tf::capi

using namespace tf;
using namespace tf::capi;

extern "C" {

tf_status tf_devices_json(const char* devices, const char** out) {
  return guarded([&] {
    require(out != nullptr, "tf_devices_json: no place for the answer");
    install_once();
    const std::string spec = devices && *devices ? devices : "all";
    nlohmann::json all = nlohmann::json::array();
    auto lease = device_pool().take(spec, 0);
    for (const auto& d : lease.selection->devices) {
      const DeviceInfo& i = d->info();
      all.push_back({{"id", i.id},
                     {"name", i.name},
                     {"kind", i.kind == DeviceKind::Cuda ? "gpu" : "cpu"},
                     {"ordinal", i.ordinal},
                     {"memory_total", i.memory_total},
                     {"memory_free", i.memory_free},
                     {"multiprocessors", i.multiprocessors},
                     {"link", i.link}});
    }
    nlohmann::json answer{{"devices", all}, {"note", lease.selection->note}, {"cuda", cuda::runtime_description()}};
    thread_text() = answer.dump();
    *out = thread_text().c_str();
  });
}

}  // extern "C"
