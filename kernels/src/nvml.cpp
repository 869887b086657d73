#include "nvml.hpp"

#include <dlfcn.h>

#include <mutex>

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

}  // namespace

bool available() { return api().ok; }

std::string pcie_link(const std::string& bus_id) {
  const auto h = handle(bus_id);
  if (!h) return {};
  const Api& a = api();
  unsigned gen = 0, width = 0, max_gen = 0, max_width = 0;
  if (a.link_gen(*h, &gen) != 0 || a.link_width(*h, &width) != 0) return {};
  std::string link = fmt::format("PCIe gen{} x{}", gen, width);
  if (a.max_link_gen(*h, &max_gen) == 0 && a.max_link_width(*h, &max_width) == 0 &&
      (max_gen != gen || max_width != width))
    link += fmt::format(" (max gen{} x{})", max_gen, max_width);
  return link;
}

std::optional<DeviceSample> sample(const std::string& bus_id) {
  const auto h = handle(bus_id);
  if (!h) return std::nullopt;
  const Api& a = api();
  DeviceSample s;
  Utilization u{};
  if (a.utilization(*h, &u) == 0) s.utilization = u.gpu;
  Memory m{};
  if (a.memory(*h, &m) == 0) {
    s.memory_used = m.used;
    s.memory_total = m.total;
  }
  return s;
}

}  // namespace tf::cuda::nvml
