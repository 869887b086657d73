// Device-resident throughput: the kernels alone, the image already on the GPU(s).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

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

// Device-to-device copy rate of GPU `ordinal` in GB/s (bytes read + written: a copy of N bytes moves
// 2N), measured once a process: 256 MiB on a stream of its own, median of 5 after 10 warm-ups (the
// first thing a run does on a GPU: its clocks are still rising).
double device_copy_gbs(int ordinal) {
  static std::mutex mutex;
  static std::map<int, double> measured;
  std::lock_guard lock(mutex);
  if (const auto it = measured.find(ordinal); it != measured.end()) return it->second;
  constexpr std::size_t kBytes = std::size_t(256) << 20;
  ScopedDevice on(ordinal);
  Stream stream(ordinal);
  Event start(ordinal), stop(ordinal);
  DeviceBuffer from, to;
  from.reserve(kBytes, ordinal);
  to.reserve(kBytes, ordinal);
  TF_CUDA_CHECK(cudaMemsetAsync(from.data(), 1, kBytes, stream.get()));
  std::vector<double> seconds;
  constexpr int kWarmups = 10;
  for (int r = 0; r < kWarmups + 5; ++r) {
    TF_CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
    TF_CUDA_CHECK(cudaMemcpyAsync(to.data(), from.data(), kBytes, cudaMemcpyDeviceToDevice, stream.get()));
    TF_CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
    TF_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    if (r >= kWarmups) seconds.push_back(elapsed_ms(start, stop) / 1e3);
  }
  std::sort(seconds.begin(), seconds.end());
  return measured[ordinal] = 2.0 * static_cast<double>(kBytes) / seconds[seconds.size() / 2] / 1e9;
}

// FP32 FMAs a second of the GPU `prop` describes: every lane of every multiprocessor, one a clock.
double fma_rate(const cudaDeviceProp& prop, int ordinal) {
  int khz = 0;  // the peak clock (cudaDeviceProp::clockRate is gone from CUDA 13)
  TF_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, ordinal));
  return static_cast<double>(prop.multiProcessorCount) * fp32_lanes_per_multiprocessor(prop.major, prop.minor) * khz *
         1e3;
}

}  // namespace

int fp32_lanes_per_multiprocessor(int major, int minor) {
  if (major == 6 && minor == 0) return 64;
  if (major == 7 || (major == 8 && minor == 0)) return 64;
  return 128;
}

Roofline make_roofline(const Chain& chain, const Format& format, double copy_gbs, double fmas_per_s,
                       double gigapixels_per_s) {
  Roofline r;
  r.copy_gbs = copy_gbs;
  r.fmas_per_s = fmas_per_s;
  for (const Stage& stage : chain) {
    r.bytes_per_pixel += 2.0 * static_cast<double>(format.pixel_bytes());
    // The convolutions run_chain launches: a single stage's first, a combining stage's two.
    const std::size_t convs = stage.combine != Combine::Single ? 2 : 1;
    for (std::size_t c = 0; c < convs && c < stage.convs.size(); ++c) {
      const Convolution& conv = stage.convs[c];
      if (conv.box_sum && format.type != PixelType::F32) continue;  // exact integer window sums, no FMAs
      const double taps = conv.separable ? conv.kernel.width + conv.kernel.height
                                         : static_cast<double>(conv.kernel.width) * conv.kernel.height;
      r.fmas_per_pixel += taps * format.channels;
    }
  }
  r.memory_gpix = r.bytes_per_pixel > 0 ? copy_gbs / r.bytes_per_pixel : 0;
  r.fma_gpix = r.fmas_per_pixel > 0 ? fmas_per_s / r.fmas_per_pixel / 1e9 : 0;
  const bool fma_bound = r.fma_gpix > 0 && r.fma_gpix < r.memory_gpix;
  r.bound = fma_bound ? "FMA" : "memory";
  const double ceiling = fma_bound ? r.fma_gpix : r.memory_gpix;
  r.share = ceiling > 0 ? gigapixels_per_s / ceiling : 0;
  return r;
}

ResidentTiming bench_device_resident(const ImageView& src, const Chain& chain, const Border& border,
                                     const std::vector<int>& ordinals, int repeats, const ImageView* output) {
  if (ordinals.empty()) throw Error(ErrorKind::InvalidArgument, "device-resident benchmark: no GPU given");
  if (repeats < 1) throw Error(ErrorKind::InvalidArgument, "device-resident benchmark: repeats must be >= 1");
  const int n = static_cast<int>(ordinals.size());
  const int band_rows = (src.height + n - 1) / n;
  const auto tiles = plan_tiles(src.width, src.height, chain_halo(chain), {src.width, band_rows});
  const std::size_t ps = src.format.pixel_bytes();

  ResidentTiming result;
  double copy_gbs = 0, fmas_per_s = 0;  // the GPUs' ceilings, summed
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
    copy_gbs += device_copy_gbs(ordinal);
    fmas_per_s += fma_rate(prop, ordinal);
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
  result.roofline = make_roofline(chain, src.format, copy_gbs, fmas_per_s, result.gigapixels_per_s);
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
