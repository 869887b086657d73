// Device-resident throughput: the kernels alone, the image already on the GPU(s).
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "chain_runner.hpp"
#include "cuda_util.hpp"
#include "tile_plan.hpp"
#include "tilefilter/cpu.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/error.hpp"

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
  const auto tiles = plan_tiles(src.width, src.height, chain_halo(chain), src.width, band_rows);
  const std::size_t ps = src.format.pixel_bytes();

  ResidentTiming result;
  std::vector<std::unique_ptr<Band>> bands;
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    if (!cpu::chain_fits_tile(chain, tiles[i], src.width, src.height, border.mode))
      throw Error(ErrorKind::InvalidArgument,
                  "device-resident benchmark: this chain cannot run in one pass with this border; bench its filters one by one");
    const int ordinal = ordinals[i];
    ScopedDevice on(ordinal);
    auto b = std::make_unique<Band>(ordinal, tiles[i]);
    cudaDeviceProp prop{};
    TF_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
    b->multiprocessors = prop.multiProcessorCount;
    result.devices.push_back(fmt::format("gpu{} ({})", ordinal, prop.name));
    b->taps.upload(chain, ordinal);
    b->plan = plan_tile(chain, b->tile, src.width, src.height, border.mode);
    b->buffers.reserve(lane_needs(chain, b->plan, src.format), ordinal);
    TF_CUDA_CHECK(cudaMemcpy(b->buffers.maps.data(), b->plan.maps.data(), b->plan.maps.size() * sizeof(int),
                             cudaMemcpyHostToDevice));
    const std::size_t pitch = device_pitch(b->plan.upload_width, ps);
    auto* d_up = b->buffers.upload.as<std::byte>();
    for (const auto& yr : b->plan.rows)
      for (const auto& xr : b->plan.columns)
        TF_CUDA_CHECK(cudaMemcpy2D(d_up + yr.compact * pitch + xr.compact * ps, pitch, src.row(yr.source) + xr.source * ps,
                                   src.pitch, xr.length * ps, yr.length, cudaMemcpyHostToDevice));
    bands.push_back(std::move(b));
  }

  std::vector<DeviceRegion> outputs(bands.size());
  auto launch_all = [&] {
    for (std::size_t i = 0; i < bands.size(); ++i) {
      Band& b = *bands[i];
      ScopedDevice on(b.device);
      TF_CUDA_CHECK(cudaEventRecord(b.start.get(), b.stream.get()));
      outputs[i] = run_chain(chain, b.plan, b.taps, b.buffers, {b.buffers.upload.data(), device_pitch(b.plan.upload_width, ps)},
                             src.format, border, b.multiprocessors, b.stream.get());
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
  std::vector<double> sorted = result.seconds;
  std::sort(sorted.begin(), sorted.end());
  result.median_s = sorted[sorted.size() / 2];
  result.min_s = sorted.front();
  result.max_s = sorted.back();
  result.gigapixels_per_s = static_cast<double>(src.width) * src.height / result.median_s / 1e9;
  return result;
}

}  // namespace tf::cuda
