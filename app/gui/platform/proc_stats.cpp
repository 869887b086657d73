#include "proc_stats.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace tf::gui {

double process_cpu_seconds() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return -1;
  // The command name (field 2) may hold spaces; fields after its closing parenthesis are plain.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(line.substr(close + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;  // state .. cmajflt
  unsigned long long utime = 0, stime = 0;
  if (!(fields >> utime >> stime)) return -1;
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::size_t process_resident_bytes() {
  std::ifstream in("/proc/self/statm");
  std::size_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

std::size_t process_peak_resident_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;  // in kB
  return 0;
}

HostMemory host_memory() {
  HostMemory m;
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemTotal:") m.total = kib * 1024;
    else if (key == "MemAvailable:") m.available = kib * 1024;
  }
  return m;
}

double CpuUsageMeter::sample() {
  const double cpu = process_cpu_seconds();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  double percent = -1;
  if (last_cpu_ >= 0 && cpu >= 0 && wall > last_wall_) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    percent = std::clamp(100.0 * (cpu - last_cpu_) / ((wall - last_wall_) * cores), 0.0, 100.0);
  }
  last_cpu_ = cpu;
  last_wall_ = wall;
  return percent;
}

}  // namespace tf::gui
