// NVML, loaded with dlopen("libnvidia-ml.so.1") on first use (docs/design.md, contract 6). Absent NVML means no
// utilization and no PCIe link in DeviceInfo; nothing else is lost.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/engine/device.hpp"

namespace tf::cuda::nvml {

bool available();
// "PCIe gen5 x16" (the current link; "(max genN xM)" appended when it runs below its maximum), or "".
std::string pcie_link(const std::string& pci_bus_id);
// Utilization (percent of the last sample period with a kernel running) and memory in use.
std::optional<DeviceSample> sample(const std::string& pci_bus_id);
// Every GPU in NVML's order, without a CUDA call (no driver start-up, no context): id, name, memory,
// link, and a sample; the multiprocessor count stays 0 (only CUDA gives it). Empty without NVML.
std::vector<ListedGpu> list();
// The CUDA version the driver supports (13000 = 13.0), 0 when NVML cannot say.
int cuda_driver_version();

}  // namespace tf::cuda::nvml
