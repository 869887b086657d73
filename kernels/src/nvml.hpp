// NVML, loaded with dlopen("libnvidia-ml.so.1") on first use (docs/design.md, contract 6). Absent NVML means no
// utilization and no PCIe link in DeviceInfo; nothing else is lost.
#pragma once
#include <optional>
#include <string>

#include "tilefilter/engine/device.hpp"

namespace tf::cuda::nvml {

bool available();
// "PCIe gen5 x16" (the current link; "(max genN xM)" appended when it runs below its maximum), or "".
std::string pcie_link(const std::string& pci_bus_id);
// Utilization (percent of the last sample period with a kernel running) and memory in use.
std::optional<DeviceSample> sample(const std::string& pci_bus_id);

}  // namespace tf::cuda::nvml
