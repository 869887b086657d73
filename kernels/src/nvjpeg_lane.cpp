// The GPU JPEG codec (tilefilter/gpu_jpeg.hpp) on nvJPEG. One lane per batch worker, each with its
// own decoder states, encoder states, streams and device buffers, so lanes never share mutable state
// (a GPU's nvJPEG handles are shared: GpuHandles). A batch's trip, in two halves that overlap on two
// threads (the next batch's first half with this one's second):
//   begin_batch: parse the headers (host) -> decode every file into its own buffer in one call of the
//   GPU's hardware JPEG decoder (nvjpegDecodeBatched, its buffers preallocated) where it has one and
//   the stream suits it, else nvJPEG's CUDA decoder;
//   end_batch: on one of a few streams each, the chain's kernels through run_chain, exactly as the
//   CUDA Device runs a tile (same bits for the same decoded pixels), then nvjpegEncodeImage /
//   EncodeYUV or a download -> the encoded streams collected as they finish.
// Only the compressed bytes (and the compressed result) cross PCIe.
#include "nvjpeg_lane.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nvjpeg.h>

#include "chain_runner.hpp"
#include "cuda/cuda_util.hpp"
#include "cuda_device.hpp"
#include "nvjpeg_handles.hpp"
#include "nvjpeg_hw_decoder.hpp"
#include "tile_plan.hpp"
#include "tilefilter/io/gpu_jpeg.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Seconds since t, and t moved on to now.
double lap(std::chrono::steady_clock::time_point& t) {
  const auto now = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(now - t).count();
  t = now;
  return s;
}

class NvjpegLane final : public GpuJpegLane {
 public:
  // `ordinal`: CUDA's; `name`: the device's id, for messages.
  NvjpegLane(int ordinal, int multiprocessors, std::string name)
      : ordinal_(ordinal), multiprocessors_(multiprocessors), stream_(ordinal), name_(std::move(name)) {
    ScopedDevice on(ordinal);
    for (auto& set : sets_) set = std::make_unique<DecodeSet>(ordinal);
    // Subsampled chroma is interpolated, as libjpeg-turbo's "fancy" upsampling does, where the
    // backend offers it (create()).
    shared_ = handles_for(ordinal);
    hw_.value = shared_->hw.value;
    if (hw_.value) {
      // The state for gray files, the second set's states and the CUDA decoder's come with the first
      // file that needs them.
      check(nvjpegJpegStreamCreate(hw_.value, &hw_parsed_.value), name_, "hardware stream parser");
      hw_decoder_.emplace(hw_.value, name_);
    } else {
      cuda_decoder();
      check(nvjpegJpegStreamCreate(handle_.value, &parsed_.value), name_, "stream parser");
    }
    // The encoder on either handle gives the same bytes (compared on an H100).
    coder_.value = hw_.value ? hw_.value : handle_.value;
    slots_.push_back(std::make_unique<Slot>(ordinal_, coder_.value, name_));  // the others with the first batch
  }

  ~NvjpegLane() override {
    try {
      ScopedDevice on(ordinal_);
      drain();
    } catch (...) {
    }
  }

  GpuJpegSteps steps() const override { return steps_; }

  // The headers are parsed, the hardware decoder's call has taken its streams (nvJPEG stages pageable
  // bytes before it returns) and the CUDA decoder's calls were waited for, all in begin_batch; the test
  // GpuJpeg.HalvesOnTwoThreadsGiveWhatRunBatchGives overwrites the bytes after it.
  bool done_with_bytes_at_begin() const override { return true; }

  std::size_t reserved_bytes() const override {
    std::size_t n = 0;
    for (const auto& slot : slots_) n += slot->buffers.bytes() + slot->taps.bytes();
    for (const auto& set : sets_)
      for (const auto& d : set->decoded) n += d.capacity();
    return n;
  }

  std::vector<GpuJpegOutcome> run_batch(std::span<const GpuJpegJob> jobs) override {
    return end_batch(begin_batch(jobs));
  }

  // The batch's first half: headers parsed (host), every file the hardware takes decoded in one call
  // without waiting for it, the rest by the CUDA decoder, into one of two sets of buffers, so that the
  // next batch decodes while another thread filters and encodes this one (end_batch). A third batch
  // waits here until the first has ended and given its set back.
  std::unique_ptr<GpuJpegPending> begin_batch(std::span<const GpuJpegJob> jobs) override {
    ScopedDevice on(ordinal_);
    auto pending = std::make_unique<Pending>(*this, claim_set());
    DecodeSet& set = *sets_[pending->set];
    std::vector<Item>& items = pending->items;
    items.resize(jobs.size());
    auto t = std::chrono::steady_clock::now();
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      items[k].job = &jobs[k];
      guarded(
          items[k], [&] { prepare(items[k]); }, Half::Begin);
    }
    steps_.parse_s += lap(t);
    while (set.decoded.size() < items.size()) set.decoded.emplace_back();
    for (std::size_t k = 0; k < items.size(); ++k)
      guarded(
          items[k],
          [&] {
            Item& it = items[k];
            it.pitch = device_pitch(it.w, static_cast<std::size_t>(it.channels));
            set.decoded[k].reserve(it.pitch * static_cast<std::size_t>(it.h), ordinal_);
            it.dest = &set.decoded[k];
          },
          Half::Begin);
    TF_CUDA_CHECK(cudaEventRecord(set.begin.get(), stream_.get()));
    lap(t);
    pending->on_hardware = decode_on_hardware(items, 1, pending->set) + decode_on_hardware(items, 3, pending->set);
    TF_CUDA_CHECK(cudaEventRecord(set.end.get(), stream_.get()));
    steps_.hw_decode_s += lap(t);
    for (Item& it : items)
      if (it.error.empty() && !it.decoded)
        guarded(
            it, [&] { decode_one(it); }, Half::Begin);
    steps_.cuda_decode_s += lap(t);
    return pending;
  }

  // The second half: each file filtered and encoded on one of kSlots streams, each with its own encoder
  // state, so that kSlots files are in flight at once and the host waits only to collect a finished
  // file's stream. Batches end in the order they began.
  std::vector<GpuJpegOutcome> end_batch(std::unique_ptr<GpuJpegPending> begun) override {
    ScopedDevice on(ordinal_);
    auto& pending = static_cast<Pending&>(*begun);
    DecodeSet& set = *sets_[pending.set];
    std::vector<Item>& items = pending.items;
    while (slots_.size() < std::min<std::size_t>(kSlots, items.size()))
      slots_.push_back(std::make_unique<Slot>(ordinal_, coder_.value, name_));
    auto t = std::chrono::steady_clock::now();
    std::size_t next = 0;
    for (Item& it : items) {
      if (!it.error.empty()) continue;
      Slot& slot = *slots_[next++ % slots_.size()];
      if (slot.item) collect(slot);
      lap(t);
      guarded(
          it, [&] { filter_and_encode(it, slot, set.end); }, Half::End);
      steps_.queue_s += lap(t);
    }
    for (auto& slot : slots_)
      if (slot->item) collect(*slot);
    if (pending.on_hardware > 0) {
      // The hardware call's time, shared by its files (its events are done: every slot waited for them).
      float ms = 0;
      if (cudaEventElapsedTime(&ms, set.begin.get(), set.end.get()) != cudaSuccess) (void)cudaGetLastError();
      for (Item& it : items)
        if (it.result.decoder == "nvjpeg-hardware") it.result.decode_s = ms * 1e-3 / pending.on_hardware;
    }

    std::vector<GpuJpegOutcome> out(items.size());
    for (std::size_t k = 0; k < items.size(); ++k) {
      out[k].error = std::move(items[k].error);
      out[k].kind = items[k].kind;
      out[k].result = std::move(items[k].result);
    }
    pending.ended = true;
    return out;  // `begun` gives its set back as it goes
  }

 private:
  // Files filtered and encoded at once (streams with an encoder state each). Measured on an H100 with
  // 4000x3000 photos: see docs/performance.md, "Photo batch".
  static constexpr std::size_t kSlots = 3;

  // One file of a batch on its way through the lane.
  struct Item {
    const GpuJpegJob* job = nullptr;
    int w = 0, h = 0, channels = 0;
    TilePlan plan;
    bool hardware = false, decoded = false;
    DeviceBuffer* dest = nullptr;  // where it is decoded (one of decoded_)
    std::size_t pitch = 0;
    GpuJpegResult result;
    std::string error;  // set once the file failed; the later steps skip it
    ErrorKind kind = ErrorKind::Device;
  };

  // A stream that filters and encodes one file at a time: its own encoder state (which holds the
  // encoded stream until it is collected), chain buffers and taps, and events that time the steps.
  struct Slot {
    Slot(int ordinal, nvjpegHandle_t coder, const std::string& name)
        : stream(ordinal), begin(ordinal), filtered(ordinal), done(ordinal) {
      check(nvjpegEncoderStateCreate(coder, &encoder.value, stream.get()), name, "encoder state");
      check(nvjpegEncoderParamsCreate(coder, &params.value, stream.get()), name, "encoder parameters");
    }
    Stream stream;
    Event begin, filtered, done;
    LaneBuffers buffers;
    DeviceTaps taps;
    Owned<nvjpegEncoderState_t, nvjpegEncoderStateDestroy> encoder;
    Owned<nvjpegEncoderParams_t, nvjpegEncoderParamsDestroy> params;
    Item* item = nullptr;  // the file in flight on this slot, until collect()
  };

  // The decoded files of a batch, and the events around its decode on stream_: two sets, one for the
  // batch being decoded and one for the batch being filtered and encoded.
  struct DecodeSet {
    explicit DecodeSet(int ordinal) : begin(ordinal), end(ordinal) {}
    Event begin, end;
    std::vector<DeviceBuffer> decoded;  // one per file of the largest batch so far
    bool busy = false;                  // a batch holds it, from begin_batch until it has ended
  };

  // A batch between its halves; gives its set back when destroyed (once ended, or abandoned: then its
  // decode is waited for first, since nothing may still write into the set's buffers).
  struct Pending final : GpuJpegPending {
    Pending(NvjpegLane& lane, int set) : lane(lane), set(set) {}
    ~Pending() override {
      if (!ended) lane.stream_.drain();
      lane.release_set(set);
    }
    NvjpegLane& lane;
    const int set;
    bool ended = false;
    int on_hardware = 0;  // files the hardware call took
    std::vector<Item> items;
  };

  int claim_set() {
    std::unique_lock lock(sets_mutex_);
    const int s = next_set_;
    set_free_.wait(lock, [&] { return !sets_[s]->busy; });
    sets_[s]->busy = true;
    next_set_ = 1 - s;
    return s;
  }

  void release_set(int s) {
    {
      std::lock_guard lock(sets_mutex_);
      sets_[s]->busy = false;
    }
    set_free_.notify_all();
  }

  void drain() noexcept {
    stream_.drain();
    for (auto& slot : slots_) slot->stream.drain();
  }

  // Which half a step belongs to: each runs on its own thread, and only the second touches the slots.
  enum class Half { Begin, End };

  // Runs f for one file; a failure is recorded for that file alone, after the streams of its half have
  // drained (nothing of it may still write into buffers the next file reuses).
  template <class F> void guarded(Item& it, F&& f, Half half) {
    if (!it.error.empty()) return;
    try {
      f();
    } catch (const Error& e) {
      half == Half::Begin ? stream_.drain() : drain();
      it.error = e.what();
      it.kind = e.kind();
    } catch (const std::exception& e) {
      half == Half::Begin ? stream_.drain() : drain();
      it.error = fmt::format("{}: {}", it.job->name, e.what());
    }
  }

  // The header (host only): what the stream is, whether the GPU takes it, the chain's plan for the
  // whole image as one tile (as the CUDA Device plans a tile), and whether the hardware decodes it.
  void prepare(Item& it) {
    const GpuJpegJob& job = *it.job;
    const std::string& name = job.name;
    // The header alone: the hardware decoder says from it whether it takes the stream, and its
    // batched call reads the whole stream itself.
    const nvjpegHandle_t handle = hw_.value ? hw_.value : handle_.value;
    const nvjpegJpegStream_t parsed = hw_.value ? hw_parsed_.value : parsed_.value;
    check(nvjpegJpegStreamParseHeader(handle, job.jpeg.data(), job.jpeg.size(), parsed), name, "header parse");
    nvjpegJpegEncoding_t encoding{};
    check(nvjpegJpegStreamGetJpegEncoding(parsed, &encoding), name, "encoding query");
    if (encoding != NVJPEG_ENCODING_BASELINE_DCT && encoding != NVJPEG_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN)
      throw Error(ErrorKind::Decode,
                  fmt::format("{}: {} JPEG (the GPU codec decodes sequential DCT streams)", name,
                              encoding == NVJPEG_ENCODING_PROGRESSIVE_DCT_HUFFMAN ? "progressive" : "lossless"));
    unsigned int components = 0, width = 0, height = 0;
    check(nvjpegJpegStreamGetComponentsNum(parsed, &components), name, "component query");
    check(nvjpegJpegStreamGetFrameDimensions(parsed, &width, &height), name, "size query");
    if (components != 1 && components != 3)
      throw Error(ErrorKind::Decode,
                  fmt::format("{}: JPEG of {} components (the GPU codec takes 1 or 3)", name, components));
    it.w = static_cast<int>(width);
    it.h = static_cast<int>(height);
    it.channels = components == 1 ? 1 : 3;
    if (job.chain && !job.chain->empty()) it.plan = whole_image_plan(*job.chain, job.border, it.w, it.h, name);
    if (hw_.value) {
      int unsupported = 1;
      it.hardware =
          nvjpegDecodeBatchedSupported(hw_.value, parsed, &unsupported) == NVJPEG_STATUS_SUCCESS && unsupported == 0;
    }
  }

  // The hardware decoder takes every file of the batch with `channels` that it supports in one call,
  // spread over its engines, queued on stream_ (nobody waits for it here); files of a call that
  // fails are decoded one by one after it. Returns the files it took.
  int decode_on_hardware(std::vector<Item>& items, int channels, int set) {
    std::vector<Item*> group;
    for (Item& it : items)
      if (it.error.empty() && it.hardware && it.channels == channels) group.push_back(&it);
    if (group.empty()) return 0;
    const int n = static_cast<int>(group.size());
    std::vector<const unsigned char*> data;
    std::vector<std::size_t> lengths;
    std::vector<nvjpegImage_t> dest(group.size());
    int most_w = 0, most_h = 0;
    for (std::size_t k = 0; k < group.size(); ++k) {
      data.push_back(group[k]->job->jpeg.data());
      lengths.push_back(group[k]->job->jpeg.size());
      dest[k].channel[0] = group[k]->dest->as<unsigned char>();
      dest[k].pitch[0] = group[k]->pitch;
      most_w = std::max(most_w, group[k]->w);
      most_h = std::max(most_h, group[k]->h);
    }
    if (!hw_decoder_->decode(set, channels, data, lengths, dest, most_w, most_h, stream_.get())) {
      (void)cudaGetLastError();
      stream_.drain();
      for (Item* it : group) it->hardware = false;
      return 0;
    }
    for (Item* it : group) {
      it->decoded = true;
      it->result.decoder = "nvjpeg-hardware";
    }
    return n;
  }

  // nvJPEG's CUDA decoder (Huffman on the host), one file, on stream_ after the hardware's.
  void decode_one(Item& it) {
    const GpuJpegJob& job = *it.job;
    cuda_decoder();
    nvjpegImage_t dest{};
    dest.channel[0] = it.dest->as<unsigned char>();
    dest.pitch[0] = it.pitch;
    const cudaStream_t s = stream_.get();
    const auto t0 = std::chrono::steady_clock::now();
    check(nvjpegDecode(handle_.value, state_.value, job.jpeg.data(), job.jpeg.size(), decoded_format(it.channels),
                       &dest, s),
          job.name, "decode");
    TF_CUDA_CHECK(cudaStreamSynchronize(s));
    it.decoded = true;
    it.result.decoder = "nvjpeg-cuda";
    it.result.decode_s = seconds_since(t0);
  }

  // Queues the chain's kernels on the decoded image (read in place, as the upload buffer of a tile),
  // then the encoder or a download, on `slot`'s stream once the decoders are done; collect() waits.
  void filter_and_encode(Item& it, Slot& slot, const Event& decoded) {
    const GpuJpegJob& job = *it.job;
    const cudaStream_t s = slot.stream.get();
    const Format format{PixelType::U8, it.channels};
    GpuJpegResult& result = it.result;
    result.width = it.w;
    result.height = it.h;
    result.format = format;
    TF_CUDA_CHECK(cudaStreamWaitEvent(s, decoded.get(), 0));
    TF_CUDA_CHECK(cudaEventRecord(slot.begin.get(), s));
    DeviceRegion out{it.dest->data(), it.pitch};
    if (job.chain && !job.chain->empty()) {
      const Chain& chain = *job.chain;
      slot.buffers.reserve(lane_needs(chain, it.plan, format), ordinal_);
      slot.taps.upload(chain, ordinal_, s);  // only when the taps changed
      const std::size_t map_bytes = it.plan.maps.size() * sizeof(int);
      TF_CUDA_CHECK(
          cudaMemcpyAsync(slot.buffers.maps.data(), it.plan.maps.data(), map_bytes, cudaMemcpyHostToDevice, s));
      out = run_chain(chain, it.plan, slot.taps, slot.buffers, out, format, job.border, multiprocessors_, s);
    }
    TF_CUDA_CHECK(cudaEventRecord(slot.filtered.get(), s));
    if (job.encode) {
      encode(job, slot, out, it.w, it.h, it.channels);
    } else {
      result.pixels = Image(it.w, it.h, format, job.allocator ? *job.allocator : default_allocator());
      TF_CUDA_CHECK(cudaMemcpy2DAsync(result.pixels.data(), result.pixels.view().pitch, out.data, out.pitch,
                                      static_cast<std::size_t>(it.w) * format.pixel_bytes(),
                                      static_cast<std::size_t>(it.h), cudaMemcpyDeviceToHost, s));
    }
    TF_CUDA_CHECK(cudaEventRecord(slot.done.get(), s));
    slot.item = &it;
  }

  // Waits for the slot's file, takes its encoded stream and the times of its steps.
  void collect(Slot& slot) {
    Item& it = *slot.item;
    slot.item = nullptr;
    auto t = std::chrono::steady_clock::now();
    guarded(
        it,
        [&] {
          TF_CUDA_CHECK(cudaEventSynchronize(slot.done.get()));
          steps_.wait_s += lap(t);
          GpuJpegResult& result = it.result;
          if (it.job->chain && !it.job->chain->empty()) result.filter_s = elapsed_ms(slot.begin, slot.filtered) * 1e-3;
          result.encode_s = elapsed_ms(slot.filtered, slot.done) * 1e-3;
          if (!it.job->encode) return;
          const std::string& name = it.job->name;
          const cudaStream_t s = slot.stream.get();
          std::size_t length = 0;
          check(nvjpegEncodeRetrieveBitstream(coder_.value, slot.encoder.value, nullptr, &length, s), name,
                "encode size");
          if (it.job->stream_buffer) result.jpeg = it.job->stream_buffer(length);
          result.jpeg.resize(length);
          check(nvjpegEncodeRetrieveBitstream(coder_.value, slot.encoder.value, result.jpeg.data(), &length, s), name,
                "encode copy");
          TF_CUDA_CHECK(cudaStreamSynchronize(s));
          steps_.retrieve_s += lap(t);
          result.jpeg.resize(length);
          result.encoder = "nvjpeg";
        },
        Half::End);
  }

  // As the CPU JPEG writer: job.quality and jpeg_subsampling (io.hpp); gray as gray. Queued on the slot.
  void encode(const GpuJpegJob& job, Slot& slot, DeviceRegion pixels, int w, int h, int channels) {
    const std::string& name = job.name;
    const cudaStream_t s = slot.stream.get();
    WriteOptions coding;
    coding.quality = std::clamp(job.quality, 1, 100);
    coding.subsampling = job.subsampling;
    check(nvjpegEncoderParamsSetQuality(slot.params.value, coding.quality, s), name, "quality");
    const ChromaSubsampling sub = jpeg_subsampling(coding, channels);
    const nvjpegChromaSubsampling_t css = channels == 1                    ? NVJPEG_CSS_GRAY
                                          : sub == ChromaSubsampling::S420 ? NVJPEG_CSS_420
                                          : sub == ChromaSubsampling::S422 ? NVJPEG_CSS_422
                                                                           : NVJPEG_CSS_444;
    check(nvjpegEncoderParamsSetSamplingFactors(slot.params.value, css, s), name, "subsampling");
    nvjpegImage_t src{};
    src.channel[0] = static_cast<unsigned char*>(pixels.data);
    src.pitch[0] = pixels.pitch;
    if (channels == 1)
      check(nvjpegEncodeYUV(coder_.value, slot.encoder.value, slot.params.value, &src, NVJPEG_CSS_GRAY, w, h, s), name,
            "encode");
    else
      check(nvjpegEncodeImage(coder_.value, slot.encoder.value, slot.params.value, &src, NVJPEG_INPUT_RGBI, w, h, s),
            name, "encode");
  }

  // The CUDA decoder's handle and this lane's state for it, made on first use.
  void cuda_decoder() {
    if (!handle_.value) handle_.value = shared_->cuda_decoder();
    if (!state_.value) check(nvjpegJpegStateCreate(handle_.value, &state_.value), name_, "decoder state");
  }

  const int ordinal_, multiprocessors_;
  Stream stream_;  // the decoders'
  const std::string name_;
  GpuJpegSteps steps_;  // each half adds to its own steps
  std::unique_ptr<DecodeSet> sets_[2];
  std::mutex sets_mutex_;
  std::condition_variable set_free_;
  int next_set_ = 0;  // the set the next batch takes (they alternate)
  // Destroyed bottom-up: states before their handles.
  std::shared_ptr<GpuHandles> shared_;  // outlives the states below, made from its handles
  struct HandleRef {
    nvjpegHandle_t value = nullptr;
  } hw_, handle_, coder_;                           // coder_: the handle the encoders were made from
  std::optional<HardwareBatchDecoder> hw_decoder_;  // where the GPU has a hardware decoder
  Owned<nvjpegJpegState_t, nvjpegJpegStateDestroy> state_;
  Owned<nvjpegJpegStream_t, nvjpegJpegStreamDestroy> hw_parsed_, parsed_;
  std::vector<std::unique_ptr<Slot>> slots_;  // the encoder states: destroyed before the handles
};

}  // namespace

std::unique_ptr<GpuJpegLane> make_nvjpeg_lane(const Device& device, std::string* why) {
  try {
    const int ordinal = cuda_ordinal(device);
    if (ordinal < 0) throw Error(ErrorKind::InvalidArgument, fmt::format("{} is not a GPU", device.info().id));
    return std::make_unique<NvjpegLane>(ordinal, device.info().multiprocessors, device.info().id);
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return nullptr;
  }
}

}  // namespace tf::cuda
