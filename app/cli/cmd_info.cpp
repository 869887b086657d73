// tilefilter filters | devices
#include <thread>

#include <fmt/format.h>

#include "commands.hpp"
#include "options.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/engine/device.hpp"
#include "tilefilter/engine/startup.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf::cli {

namespace {

std::string describe(const ParamInfo& p) {
  using K = ParamInfo::Kind;
  switch (p.kind) {
    case K::Number: return fmt::format("number {}..{}, default {}", p.min, p.max, p.default_value);
    case K::Integer: return fmt::format("integer {}..{}, default {}", p.min, p.max, p.default_value);
    case K::Choice: return fmt::format("one of {}, default {}", fmt::join(p.choices, "|"), p.default_text);
    case K::Bool: return fmt::format("true|false, default {}", p.default_value != 0 ? "true" : "false");
    case K::Path: return "file path, required";
  }
  return {};
}

std::string gib(std::size_t bytes) { return fmt::format("{:.1f} GiB", bytes / double(1ULL << 30)); }

// The machine's hardware threads, and those this process may use where that differs (taskset, a
// launcher's binding): the CPU workers and codec threads follow the latter.
void print_cpu() {
  const int usable = default_threads();
  const unsigned all = std::thread::hardware_concurrency();
  if (usable == static_cast<int>(all)) fmt::print("CPU:   {} hardware threads\n", all);
  else fmt::print("CPU:   {} hardware threads, {} of them usable by this process\n", all, usable);
}

}  // namespace

void add_filters(CLI::App& app) {
  auto* cmd = app.add_subcommand("filters", "list the filters, their parameters and defaults");
  cmd->callback([] {
    for (const auto& f : filter_catalog()) {
      fmt::print("{:<10} {}\n", f.name, f.summary);
      for (const auto& p : f.params) fmt::print("    {:<10} {} ({})\n", p.name, p.help, describe(p));
    }
    fmt::print("\nSPEC = name or name:key=value,key=value   e.g. gaussian:sigma=2  custom:file=k.txt,normalize=true\n");
    fmt::print("Borders (--border): {} (default reflect101)\n", border_mode_names());
  });
}

void add_devices(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "list the devices a job would use");
  auto spec = std::make_shared<std::string>("all");
  cmd->add_option("--devices", *spec, "selection to show (as for apply)")->capture_default_str();
  auto verbose = std::make_shared<bool>(false);
  cmd->add_flag("-v,--verbose", *verbose, "print the start-up steps (NVML, CUDA) on stderr");
  cmd->callback([spec, verbose] {
    struct PrintSteps {
      bool on;
      ~PrintSteps() {
        if (on) print_startup_steps();
      }
    } print_steps{*verbose};
    // NVML lists the GPUs without a CUDA context (a context a GPU costs 0.1 s, the driver's start
    // more); CUDA is asked only without NVML or for a selection other than "all".
    StartupTimer nvml("GPUs listed by NVML");
    const auto listed = cuda::list_gpus_without_contexts();
    nvml.done();
    auto print_gpu = [](const DeviceInfo& i, const std::optional<DeviceSample>& s) {
      std::string util = "n/a";
      if (s && s->utilization >= 0) util = fmt::format("{:.0f}%", s->utilization);
      fmt::print("{:<6} {}  memory {} free of {}  {}{}  utilization {}\n", i.id, i.name, gib(i.memory_free),
                 gib(i.memory_total), i.multiprocessors ? fmt::format("{} SMs  ", i.multiprocessors) : "",
                 i.link.empty() ? "link n/a" : i.link, util);
    };
    const bool without_cuda = !listed.empty() && *spec == "all";
    {
      StartupTimer cuda_version("CUDA runtime and driver versions");
      fmt::print("CUDA: {}\n",
                 without_cuda ? cuda::runtime_description_without_driver_start() : cuda::runtime_description());
    }
    if (without_cuda) {
      for (const auto& g : listed) print_gpu(g.info, g.sample);
      print_cpu();
      fmt::print("--devices all uses: ");
      for (std::size_t d = 0; d < listed.size(); ++d) fmt::print("{}{}", d ? ", " : "", listed[d].info.id);
      fmt::print("\n");
      return;
    }
    const auto gpus = discover_gpus();
    if (gpus.gpus.empty()) fmt::print("GPUs: none usable ({}); jobs run on the CPU\n", gpus.message);
    for (const auto& g : gpus.gpus) print_gpu(g->info(), g->sample());
    print_cpu();
    const auto sel = select_devices(*spec);
    fmt::print("--devices {} uses: ", *spec);
    for (std::size_t d = 0; d < sel.devices.size(); ++d) fmt::print("{}{}", d ? ", " : "", sel.devices[d]->info().id);
    fmt::print("\n");
  });
}

}  // namespace tf::cli
