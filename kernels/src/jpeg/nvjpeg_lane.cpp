// The GPU JPEG codec (tilefilter/gpu_jpeg.hpp) on nvJPEG. One lane per batch worker thread, each
// with its own nvJPEG handle, decoder states, encoder state, stream and device buffers, so lanes
// never share mutable state. A file's trip, all on the lane's stream:
//   parse the header (host) -> decode into the lane's upload buffer (the GPU's hardware JPEG
//   decoder through nvjpegDecodeBatched where it has one and the stream suits it; else nvJPEG's
//   CUDA decoder) -> the chain's kernels through run_chain, exactly as the CUDA Device runs a tile
//   (same bits for the same decoded pixels) -> nvjpegEncodeImage / EncodeYUV, or a download.
// Only the compressed bytes (and the compressed result) cross PCIe.
#include "jpeg/nvjpeg_lane.hpp"

#include <algorithm>
#include <chrono>
#include <memory>

#include <fmt/format.h>
#include <nvjpeg.h>

#include "chain_runner.hpp"
#include "cuda/cuda_util.hpp"
#include "fft/fft_stage.hpp"
#include "tile_plan.hpp"
#include "tilefilter/cpu.hpp"
#include "tilefilter/error.hpp"
#include "tilefilter/gpu_jpeg.hpp"

namespace tf::cuda {

namespace {

const char* status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG: return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "allocator failure";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "implementation not supported";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "incomplete bitstream";
  }
  return "unknown status";
}

// Throws tf::Error (Device) "NAME: nvJPEG WHAT failed (STATUS)".
void check(nvjpegStatus_t s, const std::string& name, const char* what) {
  if (s != NVJPEG_STATUS_SUCCESS)
    throw Error(ErrorKind::Device, fmt::format("{}: nvJPEG {} failed ({})", name, what, status_name(s)));
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Owners of nvJPEG objects (destroyed in reverse order of the members below).
template <class T, nvjpegStatus_t (*Destroy)(T)> struct Owned {
  T value = nullptr;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (value) (void)Destroy(value);
  }
};

class NvjpegLane final : public GpuJpegLane {
 public:
  NvjpegLane(int ordinal, int multiprocessors)
      : ordinal_(ordinal), multiprocessors_(multiprocessors), stream_(ordinal) {
    ScopedDevice on(ordinal);
    const std::string name = fmt::format("gpu{}", ordinal);
    // The hardware decoder where this GPU has one (A100, H100, H200, ...); nvJPEG says so at creation.
    if (nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &hw_.value) ==
        NVJPEG_STATUS_SUCCESS) {
      check(nvjpegJpegStreamCreate(hw_.value, &hw_parsed_.value), name, "hardware stream parser");
      for (int f = 0; f < 2; ++f) {
        check(nvjpegJpegStateCreate(hw_.value, &hw_state_[f].value), name, "hardware state");
        check(nvjpegDecodeBatchedInitialize(hw_.value, hw_state_[f].value, 1, 1, kOutputs[f]), name,
              "hardware decoder setup");
      }
    } else {
      hw_.value = nullptr;
    }
    check(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &handle_.value), name,
          "library setup");
    check(nvjpegJpegStateCreate(handle_.value, &state_.value), name, "decoder state");
    check(nvjpegJpegStreamCreate(handle_.value, &parsed_.value), name, "stream parser");
    check(nvjpegEncoderStateCreate(handle_.value, &encoder_.value, stream_.get()), name, "encoder state");
    check(nvjpegEncoderParamsCreate(handle_.value, &params_.value, stream_.get()), name, "encoder parameters");
  }

  ~NvjpegLane() override {
    try {
      ScopedDevice on(ordinal_);
      stream_.drain();
    } catch (...) {
    }
  }

  std::size_t reserved_bytes() const override { return buffers_.bytes() + taps_.bytes(); }

  GpuJpegResult run(const GpuJpegJob& job) override {
    ScopedDevice on(ordinal_);
    try {
      return run_on_device(job);
    } catch (...) {
      stream_.drain();  // nothing may still write into buffers the next file reuses
      if (hw_.value)    // "also used to reset failed batches"
        for (int f = 0; f < 2; ++f)
          (void)nvjpegDecodeBatchedInitialize(hw_.value, hw_state_[f].value, 1, 1, kOutputs[f]);
      throw;
    }
  }

 private:
  static constexpr nvjpegOutputFormat_t kOutputs[2] = {NVJPEG_OUTPUT_Y, NVJPEG_OUTPUT_RGBI};

  GpuJpegResult run_on_device(const GpuJpegJob& job) {
    using Clock = std::chrono::steady_clock;
    const std::string& name = job.name;
    const cudaStream_t s = stream_.get();
    const Chain empty;
    const Chain& chain = job.chain ? *job.chain : empty;

    // The header: what the stream is and whether the GPU takes it.
    check(nvjpegJpegStreamParseHeader(handle_.value, job.jpeg.data(), job.jpeg.size(), parsed_.value), name,
          "header parse");
    nvjpegJpegEncoding_t encoding{};
    check(nvjpegJpegStreamGetJpegEncoding(parsed_.value, &encoding), name, "encoding query");
    if (encoding != NVJPEG_ENCODING_BASELINE_DCT && encoding != NVJPEG_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN)
      throw Error(ErrorKind::Decode,
                  fmt::format("{}: {} JPEG (the GPU codec decodes sequential DCT streams)", name,
                              encoding == NVJPEG_ENCODING_PROGRESSIVE_DCT_HUFFMAN ? "progressive" : "lossless"));
    unsigned int components = 0, width = 0, height = 0;
    check(nvjpegJpegStreamGetComponentsNum(parsed_.value, &components), name, "component query");
    check(nvjpegJpegStreamGetFrameDimensions(parsed_.value, &width, &height), name, "size query");
    if (components != 1 && components != 3)
      throw Error(ErrorKind::Decode,
                  fmt::format("{}: JPEG of {} components (the GPU codec takes 1 or 3)", name, components));
    const int w = static_cast<int>(width), h = static_cast<int>(height);
    const int channels = components == 1 ? 1 : 3;
    const Format format{PixelType::U8, channels};
    const std::size_t ps = format.pixel_bytes();

    // The chain's plan for the whole image as one tile (as the CUDA Device plans a tile).
    TilePlan plan;
    if (chain.empty()) {
      plan.upload_width = w;
      plan.upload_height = h;
      buffers_.upload.reserve(device_pitch(w, ps) * static_cast<std::size_t>(h), ordinal_);
    } else {
      const Tile tile = plan_tiles(w, h, chain_halo(chain), {w, h}).front();
      if (!cpu::chain_fits_tile(chain, tile, w, h, job.border.mode))
        throw Error(ErrorKind::InvalidArgument,
                    fmt::format("{}: this chain runs filter by filter with this border on a {}x{} image", name, w, h));
      if (std::any_of(chain.begin(), chain.end(), fft_stage))
        throw Error(ErrorKind::InvalidArgument, fmt::format("{}: a 2-D kernel this large takes the FFT path", name));
      plan = plan_tile(chain, tile, w, h, job.border.mode);
      const bool whole = plan.rows.size() == 1 && plan.columns.size() == 1 && plan.rows[0].source == 0 &&
                         plan.rows[0].length == h && plan.rows[0].compact == 0 && plan.columns[0].source == 0 &&
                         plan.columns[0].length == w && plan.columns[0].compact == 0;
      if (!whole)
        throw Error(ErrorKind::InvalidArgument,
                    fmt::format("{}: this border reads the image in pieces (wrap on a small image)", name));
      buffers_.reserve(lane_needs(chain, plan, format), ordinal_);
      taps_.upload(chain, ordinal_);  // only when the taps changed
      const std::size_t map_bytes = plan.maps.size() * sizeof(int);
      TF_CUDA_CHECK(cudaMemcpyAsync(buffers_.maps.data(), plan.maps.data(), map_bytes, cudaMemcpyHostToDevice, s));
    }

    // Decode into the upload buffer, where the first kernel reads the tile.
    GpuJpegResult result;
    result.width = w;
    result.height = h;
    result.format = format;
    const std::size_t pitch = device_pitch(plan.upload_width, ps);
    nvjpegImage_t decoded{};
    decoded.channel[0] = buffers_.upload.as<unsigned char>();
    decoded.pitch[0] = pitch;
    const auto t0 = Clock::now();
    int unsupported = 1;
    if (hw_.value) {
      check(nvjpegJpegStreamParse(hw_.value, job.jpeg.data(), job.jpeg.size(), 0, 0, hw_parsed_.value), name, "parse");
      (void)nvjpegDecodeBatchedSupported(hw_.value, hw_parsed_.value, &unsupported);
    }
    const unsigned char* data = job.jpeg.data();
    const std::size_t length = job.jpeg.size();
    if (hw_.value && unsupported == 0) {
      check(nvjpegDecodeBatched(hw_.value, hw_state_[channels == 3].value, &data, &length, &decoded, s), name,
            "hardware decode");
      result.decoder = "nvjpeg-hardware";
    } else {
      check(nvjpegDecode(handle_.value, state_.value, data, length, kOutputs[channels == 3], &decoded, s), name,
            "decode");
      result.decoder = "nvjpeg-cuda";
    }
    TF_CUDA_CHECK(cudaStreamSynchronize(s));
    result.decode_s = seconds_since(t0);

    DeviceRegion out{buffers_.upload.data(), pitch};
    if (!chain.empty()) {
      const auto t1 = Clock::now();
      out = run_chain(chain, plan, taps_, buffers_, out, format, job.border, multiprocessors_, s);
      TF_CUDA_CHECK(cudaStreamSynchronize(s));
      result.filter_s = seconds_since(t1);
    }

    const auto t2 = Clock::now();
    if (job.encode) {
      encode(job, out, w, h, channels, result.jpeg);
      result.encoder = "nvjpeg";
    } else {
      result.pixels = Image(w, h, format, job.allocator ? *job.allocator : default_allocator());
      TF_CUDA_CHECK(cudaMemcpy2DAsync(result.pixels.data(), result.pixels.view().pitch, out.data, out.pitch,
                                      static_cast<std::size_t>(w) * ps, static_cast<std::size_t>(h),
                                      cudaMemcpyDeviceToHost, s));
      TF_CUDA_CHECK(cudaStreamSynchronize(s));
    }
    result.encode_s = seconds_since(t2);
    return result;
  }

  // As the CPU JPEG writer: 4:4:4 from quality 90, else 4:2:0; gray as gray (JpegWriter in
  // core/src/io/format_jpeg.cpp).
  void encode(const GpuJpegJob& job, DeviceRegion pixels, int w, int h, int channels, std::vector<unsigned char>& out) {
    const std::string& name = job.name;
    const cudaStream_t s = stream_.get();
    const int quality = std::clamp(job.quality, 1, 100);
    check(nvjpegEncoderParamsSetQuality(params_.value, quality, s), name, "quality");
    const nvjpegChromaSubsampling_t css = channels == 1   ? NVJPEG_CSS_GRAY
                                          : quality >= 90 ? NVJPEG_CSS_444
                                                          : NVJPEG_CSS_420;
    check(nvjpegEncoderParamsSetSamplingFactors(params_.value, css, s), name, "subsampling");
    nvjpegImage_t src{};
    src.channel[0] = static_cast<unsigned char*>(pixels.data);
    src.pitch[0] = pixels.pitch;
    if (channels == 1)
      check(nvjpegEncodeYUV(handle_.value, encoder_.value, params_.value, &src, NVJPEG_CSS_GRAY, w, h, s), name,
            "encode");
    else
      check(nvjpegEncodeImage(handle_.value, encoder_.value, params_.value, &src, NVJPEG_INPUT_RGBI, w, h, s), name,
            "encode");
    std::size_t length = 0;
    check(nvjpegEncodeRetrieveBitstream(handle_.value, encoder_.value, nullptr, &length, s), name, "encode size");
    out.resize(length);
    check(nvjpegEncodeRetrieveBitstream(handle_.value, encoder_.value, out.data(), &length, s), name, "encode copy");
    TF_CUDA_CHECK(cudaStreamSynchronize(s));
    out.resize(length);
  }

  const int ordinal_, multiprocessors_;
  Stream stream_;
  LaneBuffers buffers_;
  DeviceTaps taps_;
  // Destroyed bottom-up: states before their handles.
  Owned<nvjpegHandle_t, nvjpegDestroy> hw_, handle_;
  Owned<nvjpegJpegState_t, nvjpegJpegStateDestroy> hw_state_[2], state_;
  Owned<nvjpegJpegStream_t, nvjpegJpegStreamDestroy> hw_parsed_, parsed_;
  Owned<nvjpegEncoderState_t, nvjpegEncoderStateDestroy> encoder_;
  Owned<nvjpegEncoderParams_t, nvjpegEncoderParamsDestroy> params_;
};

}  // namespace

std::unique_ptr<GpuJpegLane> make_nvjpeg_lane(const Device& device, std::string* why) {
  try {
    return std::make_unique<NvjpegLane>(device.info().ordinal, device.info().multiprocessors);
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return nullptr;
  }
}

}  // namespace tf::cuda
