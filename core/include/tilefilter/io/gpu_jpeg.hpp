// JPEG decoding and encoding on a GPU (nvJPEG), for the batch's `--codec auto|gpu`. No CUDA type
// appears here: the CUDA backend installs a provider when it was built with nvJPEG; without one
// every JPEG goes through the CPU codecs, as before.
//
// One file's trip: its compressed bytes go to the GPU, are decoded there (the hardware JPEG
// decoder where the GPU has one, else nvJPEG's CUDA decoder), filtered there by the same kernels as
// tiles of the Device path (same bits for the same decoded pixels), and encoded there when the
// output is a JPEG; only compressed bytes cross PCIe. Decoded pixels differ from libjpeg-turbo's
// by the inverse DCT's and the chroma upsampling's rounding (docs/design.md, "GPU JPEG").
#pragma once
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tilefilter/engine/device.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/image/border.hpp"
#include "tilefilter/image/image.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/util/error.hpp"

namespace tf {

struct GpuJpegJob {
  std::span<const unsigned char> jpeg;  // the file's bytes
  std::string name;                     // for messages
  const Chain* chain = nullptr;         // null or empty: decode (and encode) only
  Border border;
  bool encode = true;             // true: the result comes back as a JPEG stream; false: as pixels
  int quality = kDefaultQuality;  // 1..100
  // As the CPU JPEG writer (jpeg_subsampling, io.hpp): FromInput = 4:4:4 from quality 90, else 4:2:0;
  // gray stays gray.
  ChromaSubsampling subsampling = ChromaSubsampling::FromInput;
  const PixelAllocator* allocator = nullptr;  // for pixels that come back (null: default_allocator)
  // Where the encoded stream goes: an empty vector with room for n bytes (null: a new one).
  std::function<std::vector<unsigned char>(std::size_t)> stream_buffer;
};

struct GpuJpegResult {
  int width = 0, height = 0;
  Format format;                    // U8 with 1 or 3 channels
  std::vector<unsigned char> jpeg;  // job.encode: the stream, without metadata (jpeg_with_metadata adds it)
  Image pixels;                     // !job.encode: the filtered (or decoded) pixels
  double decode_s = 0, filter_s = 0, encode_s = 0;  // on the GPU, from its events; download counts as encode
  std::string decoder, encoder;                     // "nvjpeg-hardware" or "nvjpeg-cuda"; "nvjpeg" or ""
};

// One file's outcome in a batch: the result, or why the GPU could not take the file (progressive
// or 12-bit or CMYK stream, a chain that does not run in one pass, an nvJPEG or CUDA failure): the
// caller then decodes it on the CPU, with the message as the reason.
struct GpuJpegOutcome {
  GpuJpegResult result;
  std::string error;  // empty: ok
  ErrorKind kind = ErrorKind::Device;
};

// Where a lane's calls spent their time on the host, in seconds summed over its calls: what a worker's busy
// time is made of.
struct GpuJpegSteps {
  double parse_s = 0;        // the headers parsed
  double hw_decode_s = 0;    // in the hardware decoder's batched call (it queues the decode, parsing on the host)
  double cuda_decode_s = 0;  // nvJPEG's CUDA decoder, a file at a time, waited for
  double queue_s = 0;        // the chain's kernels and the encoder queued
  double wait_s = 0;         // waiting for a file's stream to finish (decode, filter, encode on the GPU)
  double retrieve_s = 0;     // the encoded stream copied back
};

// A batch a lane has begun and not yet ended (GpuJpegLane::begin_batch).
struct GpuJpegPending {
  virtual ~GpuJpegPending() = default;
};

// One worker's codec on one GPU (its own nvJPEG states, streams and buffers); several per GPU run at
// once. Not thread-safe, except that begin_batch and end_batch may run at once on two threads.
class GpuJpegLane {
 public:
  virtual ~GpuJpegLane() = default;
  // Several files at once: the hardware decoder spreads one call's files over its engines (one
  // file a call keeps one engine busy). One outcome per job, in order; one file's failure is its own.
  virtual std::vector<GpuJpegOutcome> run_batch(std::span<const GpuJpegJob> jobs) = 0;
  // run_batch in two halves, so that one thread decodes the next batch while another filters and
  // encodes this one: begin_batch calls in one thread, end_batch calls in another, each in the order of
  // the batches; the jobs live until their end_batch returns (their bytes only until begin_batch returns
  // where done_with_bytes_at_begin()), and a pending batch dropped without it is abandoned. A lane may
  // keep a begin_batch waiting until an earlier batch has ended. By default begin_batch only keeps the
  // jobs and end_batch runs run_batch.
  virtual std::unique_ptr<GpuJpegPending> begin_batch(std::span<const GpuJpegJob> jobs);
  virtual std::vector<GpuJpegOutcome> end_batch(std::unique_ptr<GpuJpegPending> pending);
  // True when begin_batch has read its jobs' bytes for good by the time it returns (its decoder copied
  // them), so that the caller may reuse their memory while the batch is on the GPU.
  virtual bool done_with_bytes_at_begin() const { return false; }
  // One file; throws tf::Error with the outcome's message when it fails.
  GpuJpegResult run(const GpuJpegJob& job);
  // The GPU's device memory this lane holds now (tests check that a long run does not grow it).
  virtual std::size_t reserved_bytes() const = 0;
  // Where its calls' time went so far (zeros where the lane does not keep them).
  virtual GpuJpegSteps steps() const { return {}; }
};

// Makes a lane on `device` (a CUDA device), or returns null with `why`.
using GpuJpegProvider = std::function<std::unique_ptr<GpuJpegLane>(const Device& device, std::string* why)>;
void set_gpu_jpeg_provider(GpuJpegProvider provider);
// Null with `why` ("built without nvJPEG", "cpu0 is not a GPU") when `device` has no GPU codec.
std::unique_ptr<GpuJpegLane> make_gpu_jpeg_lane(const Device& device, std::string* why = nullptr);
// Whether this build has a GPU JPEG codec at all (a provider was installed).
bool have_gpu_jpeg();

// `--codec`: where JPEGs are decoded and encoded. Auto sends JPEGs to the GPUs' codecs while they
// have room and to the CPU codec threads otherwise; Gpu sends every JPEG it can to a GPU.
enum class CodecChoice { Auto, Cpu, Gpu };
CodecChoice parse_codec_choice(const std::string& text);  // throws tf::Error (InvalidArgument)
const char* to_string(CodecChoice c);

}  // namespace tf
