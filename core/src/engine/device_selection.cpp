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

}  // namespace

namespace {

int parse_int(std::string_view s, const std::string& spec) {
  int v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    throw Error(ErrorKind::InvalidArgument, fmt::format("--devices '{}': '{}' is not a device number", spec, s));
  return v;
}

}  // namespace

DeviceSpec parse_device_spec(const std::string& spec_in) {
  DeviceSpec parsed;
  parsed.text = spec_in.empty() ? "all" : spec_in;
  const std::string& spec = parsed.text;
  std::string_view rest = spec;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    using Kind = DeviceSpec::Kind;
    if (item == "all") {
      parsed.items.push_back({Kind::All});
    } else if (item == "gpu") {
      parsed.items.push_back({Kind::Gpu});
    } else if (item == "cpu") {
      parsed.items.push_back({Kind::Cpu});
    } else if (item.starts_with("cpu:")) {
      const int n = parse_int(item.substr(4), spec);
      if (n < 1 || n > 1024)
        throw Error(ErrorKind::InvalidArgument, fmt::format("--devices '{}': cpu:N needs 1 <= N <= 1024", spec));
      parsed.items.push_back({Kind::CpuCount, n});
    } else {
      parsed.items.push_back({Kind::Ordinal, parse_int(item, spec)});
    }
  }
  return parsed;
}

DeviceSpec::GpuUse DeviceSpec::gpu_use() const {
  GpuUse use = GpuUse::None;
  for (const Item& i : items) {
    if (i.kind == Kind::Ordinal) return GpuUse::Named;
    if (i.kind == Kind::All || i.kind == Kind::Gpu) use = GpuUse::Any;
  }
  return use;
}

bool DeviceSpec::names_cpus() const {
  return std::any_of(items.begin(), items.end(),
                     [](const Item& i) { return i.kind == Kind::Cpu || i.kind == Kind::CpuCount; });
}

void set_gpu_provider(GpuProvider p) {
  std::lock_guard lock(provider_mutex);
  provider() = std::move(p);
}

GpuDiscovery discover_gpus(std::size_t memory_cap, const std::vector<int>& only) {
  GpuProvider p;
  {
    std::lock_guard lock(provider_mutex);
    p = provider();
  }
  if (!p) return {{}, "this build has no GPU backend"};
  GpuDiscovery found = p(memory_cap, only);
  if (keeping_gpu_resources_until_exit())
    for (const auto& g : found.gpus) keep_until_exit(g);
  return found;
}

namespace {

// The GPUs a spec names by number ("0,cpu:2" -> {0}), or none when it takes every GPU ("all", "gpu", "1,gpu").
std::vector<int> named_gpus(const DeviceSpec& spec) {
  std::vector<int> ordinals;
  for (const DeviceSpec::Item& item : spec.items) {
    if (item.kind == DeviceSpec::Kind::All || item.kind == DeviceSpec::Kind::Gpu) return {};
    if (item.kind == DeviceSpec::Kind::Ordinal) ordinals.push_back(item.number);
  }
  return ordinals;
}

// select_devices; `all_gpus` gives the GPUs, asked only when the spec needs them.
DeviceSelection select_from(const std::string& spec_in, const std::function<const GpuDiscovery&()>& all_gpus) {
  const DeviceSpec parsed = parse_device_spec(spec_in);
  const std::string& spec = parsed.text;
  DeviceSelection sel;
  const int cores = default_threads();
  int cpu_count = 0;
  auto add_cpus = [&](int n) {
    for (int i = 0; i < n; ++i) sel.devices.push_back(cpu::make_cpu_device(cpu_count++));
  };
  for (const DeviceSpec::Item& item : parsed.items) {
    switch (item.kind) {
      case DeviceSpec::Kind::All:
        if (all_gpus().gpus.empty()) {
          sel.note = fmt::format("no GPU ({}); using {} CPU workers", all_gpus().message, cores);
          add_cpus(cores);
        } else {
          for (auto& g : all_gpus().gpus) sel.devices.push_back(g);
        }
        break;
      case DeviceSpec::Kind::Gpu:
        if (all_gpus().gpus.empty())
          throw Error(ErrorKind::Device, fmt::format("--devices gpu: no GPU available ({})", all_gpus().message));
        for (auto& g : all_gpus().gpus) sel.devices.push_back(g);
        break;
      case DeviceSpec::Kind::Cpu: add_cpus(cores); break;
      case DeviceSpec::Kind::CpuCount: add_cpus(item.number); break;
      case DeviceSpec::Kind::Ordinal: {
        auto& found = all_gpus();
        auto it = std::find_if(found.gpus.begin(), found.gpus.end(),
                               [&](const DevicePtr& d) { return d->info().ordinal == item.number; });
        if (it == found.gpus.end())
          throw Error(ErrorKind::Device,
                      fmt::format("--devices '{}': there is no GPU {} ({} found{}{})", spec, item.number,
                                  found.visible >= 0 ? static_cast<std::size_t>(found.visible) : found.gpus.size(),
                                  found.message.empty() ? "" : ": ", found.message));
        sel.devices.push_back(*it);
        break;
      }
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
    if (!gpus) gpus = discover_gpus(memory_cap, named_gpus(parse_device_spec(spec)));
    return *gpus;
  });
}

DeviceSelection select_devices(const std::string& spec, const GpuDiscovery& discovered) {
  return select_from(spec, [&]() -> const GpuDiscovery& { return discovered; });
}

// "all" spreads a device image over every GPU only where the chain's work outweighs the copies between
// them: on two H100s (2026-11-26) an 8192² RGBA8 image took 0.54 ms on one GPU and 1.08 split at σ 1.5
// (22 multiply-adds a sample), 1.13 / 1.36 at σ 5 (62), 1.89 / 1.77 for a box of radius 20 (82), 4.55 /
// 3.13 at σ 15 (182). Below 16 Mpix the copies' fixed costs are not worth it.
bool worth_splitting(const Chain& chain, const Format& format, long long pixels) {
  constexpr long long kFmasPerSampleByte = 80;
  return pixels >= kSplitMinPixels &&
         chain_fmas_per_pixel(chain) >= kFmasPerSampleByte * static_cast<long long>(bytes_per_sample(format.type));
}

std::vector<int> device_image_gpus(const DeviceSpec& spec, const Chain& chain, const Format& format, long long pixels,
                                   const std::function<std::vector<int>()>& gpu_ordinals) {
  if (spec.names_cpus())
    throw Error(
        ErrorKind::InvalidArgument,
        fmt::format("--devices '{}': an image in GPU memory is filtered on GPUs (all, gpu or ordinals like 0,1)",
                    spec.text));
  using Kind = DeviceSpec::Kind;
  const bool every_gpu = std::any_of(spec.items.begin(), spec.items.end(), [](const DeviceSpec::Item& i) {
    return i.kind == Kind::All || i.kind == Kind::Gpu;
  });
  if (every_gpu) return worth_splitting(chain, format, pixels) ? gpu_ordinals() : std::vector<int>{};
  std::vector<int> gpus;
  for (const DeviceSpec::Item& item : spec.items)
    if (std::find(gpus.begin(), gpus.end(), item.number) == gpus.end()) gpus.push_back(item.number);
  return gpus;
}

int gpu_count(const std::vector<DevicePtr>& devices) {
  return static_cast<int>(std::count_if(devices.begin(), devices.end(),
                                        [](const DevicePtr& d) { return d->info().kind == DeviceKind::Cuda; }));
}

}  // namespace tf
