#include "tilefilter/engine/device_selection.hpp"

#include <algorithm>
#include <charconv>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/engine/device.hpp"
#include "tilefilter/engine/startup.hpp"
#include "tilefilter/util/error.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf {

namespace {
std::mutex provider_mutex;
GpuProvider& provider() {
  static GpuProvider p;
  return p;
}

int parse_int(std::string_view s, const std::string& spec) {
  int v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    throw Error(ErrorKind::InvalidArgument, fmt::format("--devices '{}': '{}' is not a device number", spec, s));
  return v;
}
}  // namespace

void set_gpu_provider(GpuProvider p) {
  std::lock_guard lock(provider_mutex);
  provider() = std::move(p);
}

GpuDiscovery discover_gpus(std::size_t memory_cap) {
  GpuProvider p;
  {
    std::lock_guard lock(provider_mutex);
    p = provider();
  }
  if (!p) return {{}, "this build has no GPU backend"};
  GpuDiscovery found = p(memory_cap);
  if (keeping_gpu_resources_until_exit())
    for (const auto& g : found.gpus) keep_until_exit(g);
  return found;
}

namespace {

// select_devices; `all_gpus` gives the GPUs, asked only when the spec needs them.
DeviceSelection select_from(const std::string& spec_in, const std::function<const GpuDiscovery&()>& all_gpus) {
  const std::string spec = spec_in.empty() ? "all" : spec_in;
  DeviceSelection sel;
  const int cores = default_threads();
  int cpu_count = 0;
  auto add_cpus = [&](int n) {
    for (int i = 0; i < n; ++i) sel.devices.push_back(cpu::make_cpu_device(cpu_count++));
  };
  std::string_view rest = spec;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item == "all") {
      if (all_gpus().gpus.empty()) {
        sel.note = fmt::format("no GPU ({}); using {} CPU workers", all_gpus().message, cores);
        add_cpus(cores);
      } else {
        for (auto& g : all_gpus().gpus) sel.devices.push_back(g);
      }
    } else if (item == "gpu") {
      if (all_gpus().gpus.empty())
        throw Error(ErrorKind::Device, fmt::format("--devices gpu: no GPU available ({})", all_gpus().message));
      for (auto& g : all_gpus().gpus) sel.devices.push_back(g);
    } else if (item == "cpu") {
      add_cpus(cores);
    } else if (item.starts_with("cpu:")) {
      const int n = parse_int(item.substr(4), spec);
      if (n < 1 || n > 1024)
        throw Error(ErrorKind::InvalidArgument, fmt::format("--devices '{}': cpu:N needs 1 <= N <= 1024", spec));
      add_cpus(n);
    } else {
      const int ordinal = parse_int(item, spec);
      auto& found = all_gpus();
      auto it = std::find_if(found.gpus.begin(), found.gpus.end(),
                             [&](const DevicePtr& d) { return d->info().ordinal == ordinal; });
      if (it == found.gpus.end())
        throw Error(ErrorKind::Device,
                    fmt::format("--devices '{}': there is no GPU {} ({} found{}{})", spec, ordinal, found.gpus.size(),
                                found.message.empty() ? "" : ": ", found.message));
      sel.devices.push_back(*it);
    }
  }
  // A device named twice would run two sets of workers on one device; keep the first.
  std::vector<DevicePtr> unique;
  for (auto& d : sel.devices)
    if (std::find(unique.begin(), unique.end(), d) == unique.end()) unique.push_back(d);
  sel.devices = std::move(unique);
  if (sel.devices.empty())
    throw Error(ErrorKind::InvalidArgument, fmt::format("--devices '{}' selects no device", spec));
  return sel;
}

}  // namespace

DeviceSelection select_devices(const std::string& spec, std::size_t memory_cap) {
  std::optional<GpuDiscovery> gpus;
  return select_from(spec, [&]() -> const GpuDiscovery& {
    if (!gpus) gpus = discover_gpus(memory_cap);
    return *gpus;
  });
}

DeviceSelection select_devices(const std::string& spec, const GpuDiscovery& discovered) {
  return select_from(spec, [&]() -> const GpuDiscovery& { return discovered; });
}

}  // namespace tf
