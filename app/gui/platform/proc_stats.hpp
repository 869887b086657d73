// What Linux says about this process and the host (/proc), for the CPU's card: NVML has nothing to
// say about CPUs, so the CPU's utilization is the process's CPU time over wall time.
#pragma once
#include <cstddef>

namespace tf::gui {

double process_cpu_seconds();  // user + system time of this process, -1 when unknown
std::size_t process_resident_bytes();
std::size_t process_peak_resident_bytes();  // the high-water mark since start (VmHWM), 0 when unknown
struct HostMemory {
  std::size_t total = 0, available = 0;
};
HostMemory host_memory();

// Percent of all cores this process used since the previous call (0..100), -1 on the first call.
class CpuUsageMeter {
 public:
  double sample();

 private:
  double last_cpu_ = -1, last_wall_ = 0;
};

}  // namespace tf::gui
