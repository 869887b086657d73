// The GPU JPEG codec's registry: the CUDA backend installs a provider when built with nvJPEG.
#include "tilefilter/io/gpu_jpeg.hpp"

#include <mutex>

#include <fmt/format.h>

#include "tilefilter/util/error.hpp"

namespace tf {

namespace {

std::mutex& provider_mutex() {
  static std::mutex m;
  return m;
}
GpuJpegProvider& provider() {
  static GpuJpegProvider p;
  return p;
}

}  // namespace

namespace {
// The default halves' pending batch: the jobs alone.
struct JobsOnly final : GpuJpegPending {
  std::span<const GpuJpegJob> jobs;
};
}  // namespace

std::unique_ptr<GpuJpegPending> GpuJpegLane::begin_batch(std::span<const GpuJpegJob> jobs) {
  auto pending = std::make_unique<JobsOnly>();
  pending->jobs = jobs;
  return pending;
}

std::vector<GpuJpegOutcome> GpuJpegLane::end_batch(std::unique_ptr<GpuJpegPending> pending) {
  return run_batch(static_cast<JobsOnly&>(*pending).jobs);
}

GpuJpegResult GpuJpegLane::run(const GpuJpegJob& job) {
  std::vector<GpuJpegOutcome> out = run_batch(std::span(&job, 1));
  if (!out.at(0).error.empty()) throw Error(out[0].kind, out[0].error);
  return std::move(out[0].result);
}

void set_gpu_jpeg_provider(GpuJpegProvider p) {
  std::lock_guard lock(provider_mutex());
  provider() = std::move(p);
}

bool have_gpu_jpeg() {
  std::lock_guard lock(provider_mutex());
  return static_cast<bool>(provider());
}

std::unique_ptr<GpuJpegLane> make_gpu_jpeg_lane(const Device& device, std::string* why) {
  GpuJpegProvider p;
  {
    std::lock_guard lock(provider_mutex());
    p = provider();
  }
  if (!p) {
    if (why) *why = "this build has no GPU JPEG codec (nvJPEG was not found when it was built)";
    return nullptr;
  }
  if (device.info().kind != DeviceKind::Cuda) {
    if (why) *why = fmt::format("{} is not a GPU", device.info().id);
    return nullptr;
  }
  return p(device, why);
}

CodecChoice parse_codec_choice(const std::string& text) {
  if (text == "auto") return CodecChoice::Auto;
  if (text == "cpu") return CodecChoice::Cpu;
  if (text == "gpu") return CodecChoice::Gpu;
  throw Error(ErrorKind::InvalidArgument, fmt::format("--codec must be auto, cpu or gpu, not '{}'", text));
}

const char* to_string(CodecChoice c) {
  switch (c) {
    case CodecChoice::Auto: return "auto";
    case CodecChoice::Cpu: return "cpu";
    case CodecChoice::Gpu: return "gpu";
  }
  return "?";
}

}  // namespace tf
