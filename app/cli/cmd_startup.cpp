// tilefilter startup: what a process pays on this machine before its GPUs can work, each figure a
// fresh process's own (the CUDA runtime alone: driver, contexts, a pinned buffer) beside the whole
// process as `time` sees it, and this program's own start-up (`devices`, a tiny `apply`).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cli {

namespace {

struct StartupArgs {
  bool floor_only = false;  // the child: measure and print JSON
  bool at_once = false;     // the child: contexts from a thread each
  int runs = 3;
  std::string json;
};

struct ChildRun {
  double wall_s = 0;
  std::string out;
  int status = 0;
};

// Runs this executable with `args` as a fresh process; its whole wall time and its standard output.
ChildRun run_self(const std::vector<std::string>& args) {
  // This executable's own path: popen's shell would read its own /proc/self/exe.
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw Error(ErrorKind::Io, fmt::format("startup: cannot find this program ({})", ec.message()));
  std::string cmd = "'" + self + "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " 2>/dev/null";
  ChildRun r;
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) throw Error(ErrorKind::Io, "startup: cannot start a child process");
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe.get())) r.out.append(buf, n);
  r.status = pclose(pipe.release());
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void print_floor_json(bool at_once) {
  const auto f = cuda::measure_startup_floor(at_once);
  nlohmann::json j = {{"gpus", f.gpus},
                      {"driver_s", f.driver_s},
                      {"context_s", f.context_s},
                      {"contexts_s", f.contexts_s},
                      {"pinned_256mib_s", f.pinned_256mib_s},
                      {"note", f.note}};
  fmt::print("{}\n", j.dump());
}

void run_startup(const StartupArgs& a) {
  if (a.floor_only) return print_floor_json(a.at_once);
  nlohmann::json report = nlohmann::json::object();
  fmt::print("start-up on this machine: median of {} fresh processes each (whole process = what `time` shows)\n",
             a.runs);
  for (const bool at_once : {false, true}) {
    std::vector<double> whole, driver, contexts, pinned;
    nlohmann::json last;
    for (int r = 0; r < a.runs; ++r) {
      std::vector<std::string> args = {"startup", "--floor-only"};
      if (at_once) args.push_back("--at-once");
      const ChildRun c = run_self(args);
      last = nlohmann::json::parse(c.out, nullptr, false);
      if (last.is_discarded()) throw Error(ErrorKind::Device, "startup: the child process printed no result");
      whole.push_back(c.wall_s);
      driver.push_back(last.value("driver_s", 0.0));
      contexts.push_back(last.value("contexts_s", 0.0));
      pinned.push_back(last.value("pinned_256mib_s", 0.0));
    }
    const int gpus = last.value("gpus", 0);
    if (gpus == 0) {
      fmt::print("  CUDA runtime alone: no GPU ({}), first CUDA call {:.3f} s, whole process {:.3f} s\n",
                 last.value("note", std::string()), median(driver), median(whole));
      report["floor"] = {{"gpus", 0}, {"driver_s", median(driver)}, {"whole_process_s", median(whole)}};
      break;
    }
    const char* how = at_once ? "contexts from a thread each" : "contexts one after another";
    fmt::print(
        "  CUDA runtime alone, {} GPU{}, {}: driver {:.3f} s, contexts {:.3f} s, pinned 256 MiB {:.3f} s; whole process "
        "{:.3f} s\n",
        gpus, gpus == 1 ? "" : "s", how, median(driver), median(contexts), median(pinned), median(whole));
    report[at_once ? "floor_contexts_at_once" : "floor"] = {{"gpus", gpus},
                                                            {"driver_s", median(driver)},
                                                            {"contexts_s", median(contexts)},
                                                            {"pinned_256mib_s", median(pinned)},
                                                            {"whole_process_s", median(whole)}};
  }
  // This program's own start-up, for comparison with the floor.
  for (const auto& [name, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"tilefilter --version", {"--version"}}, {"tilefilter devices", {"devices"}}}) {
    std::vector<double> whole;
    for (int r = 0; r < a.runs; ++r) whole.push_back(run_self(args).wall_s);
    fmt::print("  {:<24} whole process {:.3f} s\n", name, median(whole));
    report["programs"][name] = median(whole);
  }
  if (!a.json.empty()) {
    std::ofstream out(a.json);
    if (!(out << report.dump(2) << '\n')) throw Error(ErrorKind::Io, fmt::format("{}: cannot write", a.json));
    fmt::print("wrote {}\n", a.json);
  }
}

}  // namespace

void add_startup(CLI::App& app) {
  auto a = std::make_shared<StartupArgs>();
  auto* cmd = app.add_subcommand(
      "startup", "measure what starting the GPUs costs on this machine (fresh processes, the CUDA runtime alone)");
  cmd->add_option("--runs", a->runs, "fresh processes a figure (median)")->capture_default_str();
  cmd->add_option("--json", a->json, "also write the figures to this JSON file");
  cmd->add_flag("--floor-only", a->floor_only, "measure in this process and print one JSON line")->group("");
  cmd->add_flag("--at-once", a->at_once, "with --floor-only: contexts from a thread each")->group("");
  cmd->callback([a] { run_startup(*a); });
}

}  // namespace tf::cli
