#include "nvml.hpp"

#include <dlfcn.h>

#include <mutex>
#include <vector>

#include <fmt/format.h>

namespace tf::cuda::nvml {

namespace {

// The few NVML declarations used, as nvml.h defines them (so the build needs no NVML header).
using Handle = struct nvmlDevice_st*;
struct Utilization {
  unsigned int gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};
using Return = int;  // 0 = NVML_SUCCESS

struct Api {
  void* lib = nullptr;
  Return (*init)() = nullptr;
  Return (*by_bus_id)(const char*, Handle*) = nullptr;
  Return (*utilization)(Handle, Utilization*) = nullptr;
  Return (*memory)(Handle, Memory*) = nullptr;
  Return (*link_gen)(Handle, unsigned int*) = nullptr;
  Return (*link_width)(Handle, unsigned int*) = nullptr;
  Return (*max_link_gen)(Handle, unsigned int*) = nullptr;
  Return (*max_link_width)(Handle, unsigned int*) = nullptr;
  // Optional: listing without CUDA (list()).
  Return (*count)(unsigned int*) = nullptr;
  Return (*by_index)(unsigned int, Handle*) = nullptr;
  Return (*name)(Handle, char*, unsigned int) = nullptr;
  Return (*driver_version)(int*) = nullptr;  // the CUDA version the driver supports, 13000 = 13.0
  bool ok = false;
};

template <class F> bool bind(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

const Api& api() {
  static Api a;
  static std::once_flag once;
  std::call_once(once, [] {
    a.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a.lib) return;
    const bool bound = bind(a.lib, "nvmlInit_v2", a.init) &&
                       bind(a.lib, "nvmlDeviceGetHandleByPciBusId_v2", a.by_bus_id) &&
                       bind(a.lib, "nvmlDeviceGetUtilizationRates", a.utilization) &&
                       bind(a.lib, "nvmlDeviceGetMemoryInfo", a.memory) &&
                       bind(a.lib, "nvmlDeviceGetCurrPcieLinkGeneration", a.link_gen) &&
                       bind(a.lib, "nvmlDeviceGetCurrPcieLinkWidth", a.link_width) &&
                       bind(a.lib, "nvmlDeviceGetMaxPcieLinkGeneration", a.max_link_gen) &&
                       bind(a.lib, "nvmlDeviceGetMaxPcieLinkWidth", a.max_link_width);
    a.ok = bound && a.init() == 0;
    if (a.ok && !(bind(a.lib, "nvmlDeviceGetCount_v2", a.count) &&
                  bind(a.lib, "nvmlDeviceGetHandleByIndex_v2", a.by_index) && bind(a.lib, "nvmlDeviceGetName", a.name)))
      a.count = nullptr;
    if (a.ok && !bind(a.lib, "nvmlSystemGetCudaDriverVersion_v2", a.driver_version)) a.driver_version = nullptr;
  });
  return a;
}

std::optional<Handle> handle(const std::string& bus_id) {
  const Api& a = api();
  if (!a.ok) return std::nullopt;
  Handle h = nullptr;
  if (a.by_bus_id(bus_id.c_str(), &h) != 0) return std::nullopt;
  return h;
}

std::string link_of(Handle h) {
  const Api& a = api();
  unsigned gen = 0, width = 0, max_gen = 0, max_width = 0;
  if (a.link_gen(h, &gen) != 0 || a.link_width(h, &width) != 0) return {};
  std::string link = fmt::format("PCIe gen{} x{}", gen, width);
  if (a.max_link_gen(h, &max_gen) == 0 && a.max_link_width(h, &max_width) == 0 &&
      (max_gen != gen || max_width != width))
    link += fmt::format(" (max gen{} x{})", max_gen, max_width);
  return link;
}

DeviceSample sample_of(Handle h) {
  const Api& a = api();
  DeviceSample s;
  Utilization u{};
  if (a.utilization(h, &u) == 0) s.utilization = u.gpu;
  Memory m{};
  if (a.memory(h, &m) == 0) {
    s.memory_used = m.used;
    s.memory_total = m.total;
  }
  return s;
}

}  // namespace

bool available() { return api().ok; }

std::string pcie_link(const std::string& bus_id) {
  const auto h = handle(bus_id);
  return h ? link_of(*h) : std::string{};
}

std::optional<DeviceSample> sample(const std::string& bus_id) {
  const auto h = handle(bus_id);
  if (!h) return std::nullopt;
  return sample_of(*h);
}

int cuda_driver_version() {
  const Api& a = api();
  int v = 0;
  if (!a.ok || !a.driver_version || a.driver_version(&v) != 0) return 0;
  return v;
}

std::vector<ListedGpu> list() {
  const Api& a = api();
  std::vector<ListedGpu> found;
  unsigned n = 0;
  if (!a.ok || !a.count || a.count(&n) != 0) return found;
  for (unsigned i = 0; i < n; ++i) {
    Handle h = nullptr;
    if (a.by_index(i, &h) != 0) continue;
    char name[96] = {};
    (void)a.name(h, name, sizeof name);
    ListedGpu g;
    g.info.id = fmt::format("gpu{}", i);
    g.info.name = name;
    g.info.kind = DeviceKind::Cuda;
    g.info.ordinal = static_cast<int>(i);
    g.sample = sample_of(h);
    g.info.memory_total = g.sample.memory_total;
    g.info.memory_free = g.sample.memory_total - g.sample.memory_used;
    g.info.link = link_of(h);
    found.push_back(std::move(g));
  }
  return found;
}

}  // namespace tf::cuda::nvml
