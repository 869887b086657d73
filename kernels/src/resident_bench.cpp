// Device-resident throughput: the kernels alone, the image already on the GPU(s).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "chain_runner.hpp"
#include "cuda/cuda_util.hpp"
#include "host_staging.hpp"
#include "tile_plan.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/engine/backend_rules.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {

namespace {

// One GPU's band of the image, uploaded once, with its buffers, stream and timing events.
struct Band {
  Band(int ordinal, const Tile& t) : device(ordinal), tile(t), stream(ordinal), start(ordinal), stop(ordinal) {}
  int device;
  Tile tile;
  Stream stream;
  Event start, stop;
  DeviceTaps taps;
  LaneBuffers buffers;
  TilePlan plan;
  int multiprocessors = 0;
};

}  // namespace

ResidentTiming bench_device_resident(const ImageView& src, const Chain& chain, const Border& border,
                                     const std::vector<int>& ordinals, int repeats, const ImageView* output) {
  if (ordinals.empty()) throw Error(ErrorKind::InvalidArgument, "device-resident benchmark: no GPU given");
  if (repeats < 1) throw Error(ErrorKind::InvalidArgument, "device-resident benchmark: repeats must be >= 1");
  const int n = static_cast<int>(ordinals.size());
  const int band_rows = (src.height + n - 1) / n;
  const auto tiles = plan_tiles(src.width, src.height, chain_halo(chain), {src.width, band_rows});
  const std::size_t ps = src.format.pixel_bytes();

  ResidentTiming result;
  std::vector<std::unique_ptr<Band>> bands;
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    if (!chain_fits_tile(chain, tiles[i], src.width, src.height, border.mode))
      throw Error(
          ErrorKind::InvalidArgument,
          "device-resident benchmark: this chain cannot run in one pass with this border; bench its filters one by one");
    const int ordinal = ordinals[i];
    ScopedDevice on(ordinal);
    auto b = std::make_unique<Band>(ordinal, tiles[i]);
    cudaDeviceProp prop{};
    TF_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
    b->multiprocessors = prop.multiProcessorCount;
    result.devices.push_back(fmt::format("gpu{} ({})", ordinal, prop.name));
    b->taps.upload(chain, ordinal, b->stream.get());
    b->plan = plan_tile(chain, b->tile, src.width, src.height, border.mode);
    b->buffers.reserve(lane_needs(chain, b->plan, src.format), ordinal);
    TF_CUDA_CHECK(cudaMemcpy(b->buffers.maps.data(), b->plan.maps.data(), b->plan.maps.size() * sizeof(int),
                             cudaMemcpyHostToDevice));
    const std::size_t pitch = device_pitch(b->plan.upload_width, ps);
    auto* d_up = b->buffers.upload.as<std::byte>();
    for (const auto& yr : b->plan.rows)
      for (const auto& xr : b->plan.columns)
        TF_CUDA_CHECK(cudaMemcpy2D(d_up + yr.compact * pitch + xr.compact * ps, pitch,
                                   src.row(yr.source) + xr.source * ps, src.pitch, xr.length * ps, yr.length,
                                   cudaMemcpyHostToDevice));
    // Those synchronous copies from pageable memory may return before their DMA lands, on the
    // legacy stream, which the band's non-blocking stream does not wait for.
    TF_CUDA_CHECK(cudaDeviceSynchronize());
    bands.push_back(std::move(b));
  }

  std::vector<DeviceRegion> outputs(bands.size());
  std::vector<std::vector<LaunchShape>> shapes(bands.size());
  auto launch_all = [&] {
    for (std::size_t i = 0; i < bands.size(); ++i) {
      Band& b = *bands[i];
      ScopedDevice on(b.device);
      TF_CUDA_CHECK(cudaEventRecord(b.start.get(), b.stream.get()));
      shapes[i].clear();
      // Direct convolution only: the FFT path is measured end to end (--mode host).
      outputs[i] =
          run_chain(chain, b.plan, b.taps, b.buffers, {b.buffers.upload.data(), device_pitch(b.plan.upload_width, ps)},
                    src.format, border, b.multiprocessors, b.stream.get(), nullptr, &shapes[i]);
      TF_CUDA_CHECK(cudaEventRecord(b.stop.get(), b.stream.get()));
    }
  };
  auto wait_all = [&] {
    double slowest = 0;
    for (auto& b : bands) {
      ScopedDevice on(b->device);
      TF_CUDA_CHECK(cudaEventSynchronize(b->stop.get()));
      slowest = std::max(slowest, elapsed_ms(b->start, b->stop) / 1e3);
    }
    return slowest;
  };
  for (int w = 0; w < 2; ++w) {  // warm-up: module load, first-touch of buffers, clocks up
    launch_all();
    wait_all();
  }
  for (int r = 0; r < repeats; ++r) {
    launch_all();
    result.seconds.push_back(wait_all());
  }
  if (output) {
    for (std::size_t i = 0; i < bands.size(); ++i) {
      const Band& b = *bands[i];
      ScopedDevice on(b.device);
      const Rect& o = b.tile.out;
      TF_CUDA_CHECK(cudaMemcpy2D(output->row(o.y) + o.x * ps, output->pitch, outputs[i].data, outputs[i].pitch,
                                 o.width * ps, o.height, cudaMemcpyDeviceToHost));
    }
  }
  for (std::size_t i = 0; i < bands.size(); ++i)
    for (const LaunchShape& shape : shapes[i])
      result.launches.push_back(fmt::format("gpu{}: {}", bands[i]->device, describe(shape)));
  std::vector<double> sorted = result.seconds;
  std::sort(sorted.begin(), sorted.end());
  result.median_s = sorted[sorted.size() / 2];
  result.min_s = sorted.front();
  result.max_s = sorted.back();
  result.gigapixels_per_s = static_cast<double>(src.width) * src.height / result.median_s / 1e9;
  return result;
}

PcieBandwidth measure_pcie(const std::vector<int>& ordinals, std::size_t bytes) {
  struct Gpu {
    explicit Gpu(int d) : device(d), up(d), down(d) {}
    int device;
    Stream up, down;
    DeviceBuffer d_in, d_out;
    PinnedBuffer h_in, h_out;
  };
  std::vector<std::unique_ptr<Gpu>> gpus;
  for (int d : ordinals) {
    ScopedDevice on(d);
    auto g = std::make_unique<Gpu>(d);
    g->d_in.reserve(bytes, d);
    g->d_out.reserve(bytes, d);
    g->h_in.reserve(bytes);
    g->h_out.reserve(bytes);
    std::memset(g->h_in.data(), 1, bytes);
    std::memset(g->h_out.data(), 2, bytes);
    gpus.push_back(std::move(g));
  }
  // Median of 5 after a warm-up, wall clock around all GPUs' copies.
  auto time = [&](bool h2d, bool d2h, std::size_t chunk) {
    std::vector<double> t;
    for (int r = 0; r < 6; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (auto& g : gpus) {
        ScopedDevice on(g->device);
        for (std::size_t at = 0; at < bytes; at += chunk) {
          const std::size_t n = std::min(chunk, bytes - at);
          if (h2d)
            TF_CUDA_CHECK(cudaMemcpyAsync(g->d_in.as<std::byte>() + at, g->h_in.as<std::byte>() + at, n,
                                          cudaMemcpyHostToDevice, g->up.get()));
          if (d2h)
            TF_CUDA_CHECK(cudaMemcpyAsync(g->h_out.as<std::byte>() + at, g->d_out.as<std::byte>() + at, n,
                                          cudaMemcpyDeviceToHost, g->down.get()));
        }
      }
      for (auto& g : gpus) {
        ScopedDevice on(g->device);
        TF_CUDA_CHECK(cudaStreamSynchronize(g->up.get()));
        TF_CUDA_CHECK(cudaStreamSynchronize(g->down.get()));
      }
      if (r > 0) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    const double moved = static_cast<double>(bytes) * gpus.size() * ((h2d ? 1 : 0) + (d2h ? 1 : 0));
    return moved / t[t.size() / 2] / 1e9;
  };
  PcieBandwidth b;
  b.h2d = time(true, false, bytes);
  b.d2h = time(false, true, bytes);
  b.both = time(true, true, bytes);
  b.both_8mib = time(true, true, std::size_t(8) << 20);
  return b;
}

StagingRate measure_host_staging(std::size_t bytes) {
  // Rows of an 8192-pixel RGBA8 image, as the lanes copy them; median of 5 after a warm-up.
  constexpr std::size_t kRow = 32 << 10;
  const int rows = static_cast<int>(bytes / kRow);
  std::vector<std::byte> src(bytes, std::byte{3}), dst(bytes, std::byte{4});
  PinnedBuffer h_in, h_out;
  h_in.reserve(bytes);
  h_out.reserve(bytes);
  std::memset(h_out.data(), 2, bytes);
  std::vector<double> t;
  for (int r = 0; r < 6; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    stage_rows(rows, kRow, [&](int first, int count) {
      for (int y = first; y < first + count; ++y) {
        std::memcpy(h_in.as<std::byte>() + y * kRow, src.data() + y * kRow, kRow);
        std::memcpy(dst.data() + y * kRow, h_out.as<std::byte>() + y * kRow, kRow);
      }
    });
    if (r > 0) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return {static_cast<double>(rows) * kRow / t[t.size() / 2] / 1e9, staging_workers().workers()};
}

}  // namespace tf::cuda
