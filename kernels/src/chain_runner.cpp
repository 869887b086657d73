#include "chain_runner.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>

#include <fmt/format.h>

#include "conv/conv_kernels.hpp"
#include "tilefilter/engine/backend_rules.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {

namespace {

SampleType sample_type(PixelType t) {
  switch (t) {
    case PixelType::U8: return SampleType::U8;
    case PixelType::U16: return SampleType::U16;
    case PixelType::F32: return SampleType::F32;
  }
  return SampleType::U8;
}

std::size_t region_bytes(const Rect& r, std::size_t pixel_bytes) {
  return device_pitch(r.width, pixel_bytes) * static_cast<std::size_t>(r.height);
}

// Box sums for a box_sum convolution on integer samples (exact integers); else by separability.
ConvKind conv_kind(const Convolution& conv, PixelType type) {
  if (conv.box_sum && type != PixelType::F32) return ConvKind::BoxSum;
  return conv.separable ? ConvKind::Separable : ConvKind::General;
}

}  // namespace

void DeviceTaps::upload(const Chain& chain, int device, cudaStream_t stream) {
  std::vector<float> host;
  offsets_.clear();
  for (const auto& stage : chain) {
    offsets_.emplace_back();
    for (const auto& conv : stage.convs) {
      offsets_.back().push_back(host.size());
      if (conv.separable) {
        host.insert(host.end(), conv.row.begin(), conv.row.end());
        host.insert(host.end(), conv.col.begin(), conv.col.end());
      } else {
        host.insert(host.end(), conv.kernel.taps.begin(), conv.kernel.taps.end());
      }
    }
  }
  // Jobs of a benchmark or a batch repeat one chain: a synchronous copy per job is skipped then.
  if (host == uploaded_ && device == device_ && buffer_.capacity() > 0) return;
  buffer_.reserve(std::max<std::size_t>(host.size(), 1) * sizeof(float), device);
  TF_CUDA_CHECK(
      cudaMemcpyAsync(buffer_.data(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  TF_CUDA_CHECK(cudaStreamSynchronize(stream));
  uploaded_ = std::move(host);
  device_ = device;
}

std::size_t device_pitch(int width, std::size_t pixel_bytes) {
  const std::size_t row = static_cast<std::size_t>(std::max(width, 1)) * pixel_bytes;
  return (row + 127) / 128 * 128;
}

LaneNeeds lane_needs(const Chain& chain, const TilePlan& plan, const Format& format, FftPlans* fft) {
  LaneNeeds n;
  const std::size_t ps = format.pixel_bytes();
  n.upload = device_pitch(plan.upload_width, ps) * static_cast<std::size_t>(std::max(plan.upload_height, 1));
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const Rect& c = plan.stages[s].computed;
    n.stage = std::max(n.stage, region_bytes(c, ps));
    if (chain[s].combine != Combine::Single)
      n.scratch = std::max(n.scratch, region_bytes(c, sizeof(float) * format.channels));
    for (const auto& conv : chain[s].convs)
      n.inter = std::max(
          n.inter, wide_intermediate_bytes({conv_kind(conv, format.type), sample_type(format.type), format.channels,
                                            c.width, c.height, conv.kernel.width, conv.kernel.height}));
    if (fft && plan.stages[s].on_blocks && c.width > 0 && c.height > 0) {
      const FftShape shape = fft_shape(plan.stages[s].grid, format.channels);
      n.fft = std::max(n.fft, fft_layout(shape, fft->work_bytes(shape)).total);
      n.spectrum = std::max(n.spectrum, fft_spectrum_bytes(shape));
    }
  }
  n.maps = plan.maps.size() * sizeof(int);
  return n;
}

std::size_t LaneBuffers::reserve(const LaneNeeds& n, int device) {
  std::size_t added = upload.reserve(n.upload, device);
  added += stage[0].reserve(n.stage, device);
  added += stage[1].reserve(n.stage, device);
  if (n.scratch) added += scratch.reserve(n.scratch, device);
  if (n.inter) added += inter.reserve(n.inter, device);
  added += maps.reserve(n.maps, device);
  if (n.fft) added += fft.reserve(n.fft, device);
  return added;
}

std::size_t read_alignment(const Format& format) {
  return format.channels == 4 ? format.pixel_bytes() : bytes_per_sample(format.type);
}

std::size_t write_alignment(const Format& format) { return format.channels == 4 ? 16 : bytes_per_sample(format.type); }

bool is_aligned(const void* data, std::size_t pitch, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(data) % alignment == 0 && pitch % alignment == 0;
}

bool output_may_alias_input(const Chain& chain, const TilePlan& plan, const Format& format, int multiprocessors) {
  if (plan.stages.size() != 1) return plan.stages.size() > 1;
  const StagePlan& sp = plan.stages[0];
  if (sp.on_blocks) return false;
  // A combine stage's first convolution writes the float scratch; only its last writes the output.
  const Stage& stage = chain[0];
  const Convolution& last = stage.convs[stage.combine != Combine::Single ? 1 : 0];
  const ConvProblem problem{
      conv_kind(last, format.type), sample_type(format.type), format.channels,   sp.computed.width,
      sp.computed.height,           last.kernel.width,        last.kernel.height};
  const LaunchShape shape = choose_launch_shape(problem, multiprocessors);
  return problem.kind == ConvKind::BoxSum || (problem.kind == ConvKind::Separable && shape.wide);
}

DeviceRegion run_chain(const Chain& chain, const TilePlan& plan, const DeviceTaps& taps, LaneBuffers& buffers,
                       DeviceRegion input, const Format& format, const Border& border, int multiprocessors,
                       cudaStream_t stream, const FftLane* fft, std::vector<LaunchShape>* launched, DeviceRegion into) {
  const SampleType type = sample_type(format.type);
  const std::size_t ps = format.pixel_bytes();
  const float fill = quantized_border_value(border, format.type);
  const int* maps = buffers.maps.as<int>();
  DeviceRegion in = input;
  buffers.spectra_in_use.clear();
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const StagePlan& sp = plan.stages[s];
    const Stage& stage = chain[s];
    const bool last = s + 1 == plan.stages.size();
    const DeviceRegion out =
        last && into.data ? into : DeviceRegion{buffers.stage[s % 2].data(), device_pitch(sp.computed.width, ps)};
    ConvArgs a;
    a.in = {in.data,      in.pitch,     maps + sp.xmap,  maps + sp.ymap, sp.plane.width, sp.plane.height, fill,
            sp.x_span.lo, sp.x_span.hi, sp.x_span.shift, sp.y_span.lo,   sp.y_span.hi,   sp.y_span.shift};
    a.out = out.data;
    a.out_pitch = out.pitch;
    a.scratch = buffers.scratch.as<float>();
    a.scratch_pitch = device_pitch(sp.computed.width, sizeof(float) * format.channels);
    a.width = sp.computed.width;
    a.height = sp.computed.height;
    a.inter = buffers.inter.data();
    if (sp.on_blocks) {
      if (!fft) throw Error(ErrorKind::Internal, "an FFT stage planned on blocks without the lane's cuFFT plans");
      const Convolution& conv = stage.convs[0];
      a.origin_x = sp.convs[0].origin_x;
      a.origin_y = sp.convs[0].origin_y;
      a.kw = conv.kernel.width;
      a.kh = conv.kernel.height;
      a.taps = taps.at(s, 0);
      a.epilogue = Epilogue::Store;
      FftLane lane = *fft;
      lane.buffer = buffers.fft.data();
      const FftBlockArgs blocks{sp.grid, sp.plane, sp.computed, plan.image_w, plan.image_h};
      if (auto spectrum = run_fft_stage(a, blocks, type, format.channels, conv.kernel, lane, stream))
        buffers.spectra_in_use.push_back(std::move(spectrum));
      in = out;
      continue;
    }
    // A single stage uses its first convolution (as cpu::apply_stage does); magnitude and sum their two.
    const std::size_t convs = stage.combine != Combine::Single ? 2 : 1;
    for (std::size_t c = 0; c < convs; ++c) {
      const Convolution& conv = stage.convs[c];
      a.origin_x = sp.convs[c].origin_x;
      a.origin_y = sp.convs[c].origin_y;
      a.kw = conv.kernel.width;
      a.kh = conv.kernel.height;
      a.taps = taps.at(s, c);
      a.epilogue = stage.combine == Combine::Single      ? Epilogue::Store
                   : c == 0                              ? Epilogue::StoreFloat
                   : stage.combine == Combine::Magnitude ? Epilogue::Magnitude
                                                         : Epilogue::Sum;
      const ConvProblem problem{conv_kind(conv, format.type), type, format.channels, a.width, a.height, a.kw, a.kh};
      const LaunchShape shape = choose_launch_shape(problem, multiprocessors);
      a.inter_pitch = wide_intermediate_pitch(problem);
      launch_conv(shape, a, stream);
      if (launched) launched->push_back(shape);
    }
    in = out;
  }
  return in;
}

TilePlan whole_image_plan(const Chain& chain, const Border& border, int w, int h, const std::string& name) {
  const Tile tile = plan_tiles(w, h, chain_halo(chain), {w, h}).front();
  if (!chain_fits_tile(chain, tile, w, h, border.mode))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("{}: this chain runs filter by filter with this border on a {}x{} image", name, w, h));
  if (std::any_of(chain.begin(), chain.end(), fft_stage))
    throw Error(ErrorKind::InvalidArgument, fmt::format("{}: a 2-D kernel this large takes the FFT path", name));
  TilePlan plan = plan_tile(chain, tile, w, h, border.mode);
  const auto& rows = plan.rows;
  const auto& cols = plan.columns;
  const bool whole = rows.size() == 1 && cols.size() == 1 && rows[0].source == 0 && rows[0].length == h &&
                     rows[0].compact == 0 && cols[0].source == 0 && cols[0].length == w && cols[0].compact == 0;
  if (!whole)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("{}: this border reads the image in pieces (wrap on a small image)", name));
  return plan;
}

}  // namespace tf::cuda
