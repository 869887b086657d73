// Pageable host memory to and from pinned staging on every core: the lanes' staging of pageable
// images (cuda_lanes.cpp) and bench --pcie's measure of its ceiling (resident_bench.cpp).
#pragma once
#include <algorithm>
#include <cstddef>

#include "tilefilter/util/thread_pool.hpp"

namespace tf::cuda {

// A pageable image's rows cross the host's memory twice (into a lane's pinned staging, out of it),
// and one thread copies only a few GB/s: on a 16-core H200 host, 3.4 GB/s each way alone, 16 GB/s
// with six threads, 25 with sixteen (2026-11-24), where the link takes 55. So each lane's staging
// copy is split into blocks that the process's staging workers and the lane's own thread copy
// together, and the lanes' copies share every core.
inline constexpr std::size_t kStagingBlockBytes = 512 << 10;

inline ThreadPool& staging_workers() {
  static ThreadPool pool(default_threads() - 1);
  return pool;
}

// Calls copy(first, count) over [0, rows) in blocks of about kStagingBlockBytes, on the staging
// workers and the calling thread.
template <class Copy> void stage_rows(int rows, std::size_t row_bytes, const Copy& copy) {
  if (rows <= 0) return;
  const int block =
      static_cast<int>(std::max<std::size_t>(1, kStagingBlockBytes / std::max<std::size_t>(1, row_bytes)));
  const int blocks = (rows + block - 1) / block;
  staging_workers().run(blocks, [&](int i, int) { copy(i * block, std::min(block, rows - i * block)); });
}

}  // namespace tf::cuda
