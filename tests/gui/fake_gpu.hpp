// A stand-in GPU for the widget tests (CI has none): it filters on the CPU with core's reference
// code, so its output is exact, but reports its work as a GPU does — upload, kernel and download
// per tile on several streams — and answers sample() like NVML. The device panel's GPU cards and
// the timeline's stream lanes are tested with it.
#pragma once
#include "tilefilter/engine/device.hpp"

namespace tf::test {

DevicePtr make_fake_gpu(int ordinal, int streams = 3);
// Installs a GPU provider that finds `count` fake GPUs.
void install_fake_gpus(int count);

}  // namespace tf::test
