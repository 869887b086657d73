// The decode stage of BatchRun (batch_run.hpp): decode threads take the files in turn and decode them on the CPU,
// or read a JPEG's bytes and header and queue it for the GPU codecs.
#include <algorithm>
#include <array>
#include <filesystem>

#include <fmt/format.h>

#include "../io/codec_checks.hpp"
#include "batch_run.hpp"
#include "tilefilter/util/error.hpp"

namespace fs = std::filesystem;

namespace tf::batch_detail {

namespace {

constexpr std::array<unsigned char, 2> kEoi = {0xFF, 0xD9};

// Why the GPU codec cannot take a stream with this header ("" when it can).
std::string gpu_codec_refuses(const JpegStreamInfo& h) {
  if (h.progressive) return "progressive JPEG";
  if (h.precision != 8) return fmt::format("{}-bit JPEG", h.precision);
  if (h.cmyk) return "CMYK JPEG";
  if (h.components != 1 && h.components != 3) return fmt::format("JPEG of {} components", h.components);
  return {};
}

}  // namespace

// With --codec gpu a decode thread takes its next file only once it holds a place in the GPU
// codecs' queue: files are not claimed ahead of what the GPUs can take, so under MPI the other
// ranks get them (a rank's threads would otherwise each hold a file while they wait).
void BatchRun::decode_loop(int lane) {
  const int n = static_cast<int>(plan_.items.size());
  const bool hold_place = opt_.codec == CodecChoice::Gpu && !gpu_workers_.empty();
  while (!stopping()) {
    GpuPlace place;
    if (hold_place) place.take(to_gpu_);
    const int i = source_ ? source_->next() : next_++;
    if (i < 0 || i >= n) break;
    if (source_) results_[i].rank = source_->rank();
    decode_one(i, lane, place);
  }
}

void BatchRun::decode_one(int i, int lane, GpuPlace& place) {
  const BatchItem& item = plan_.items[i];
  FileResult& r = results_[i];
  if (!item.problem.empty()) return fail(i, item.problem);
  if (item.complete) {
    std::error_code ec;
    r.output_bytes = static_cast<std::size_t>(fs::file_size(item.output, ec));
    r.reason = "output already complete (--resume)";
    return finish(i, Status::Resumed);
  }
  started(i);
  bool counted = false;  // one of the CPU decodes cpu_decode_cap() allows
  if (!gpu_workers_.empty() && is_jpeg_path(item.input) && send_to_gpu(i, lane, counted, place)) return;
  place.give_back();  // not for the GPU: no place held during a CPU decode
  Work w;
  w.index = i;
  const bool decoded = decode_on_cpu(i, lane, w);
  if (counted) --cpu_decoding_;
  if (!decoded) return;
  waiting(i);
  if (chain_.empty()) to_encode_.push(std::move(w));
  else to_filter_.push(std::move(w));
}

// Decodes file i on this thread into w.src (budget taken for it and, with a filter, its result);
// false when the file failed or was discarded (already reported).
bool BatchRun::decode_on_cpu(int i, int lane, Work& w, bool wait) {
  const BatchItem& item = plan_.items[i];
  FileResult& r = results_[i];
  w.charge = Charge(&budget_, 0);
  // The budget is taken when the decoder knows the size, before the pixels exist; with a filter
  // it covers the result image too, so later stages never wait for memory (no deadlock).
  const std::size_t factor = chain_.empty() ? 1 : 2;
  const PixelAllocator alloc = budget_allocator(w.charge, factor, wait);
  const double t0 = tel_.now(), c0 = thread_cpu_s();
  try {
    w.src = decode_file(item.input, opt_.limits, alloc, &w.info);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Cancelled) return discard(i), false;
    return fail(i, e.what()), false;
  } catch (const std::exception& e) {
    return fail(i, fmt::format("{}: {}", item.input, e.what())), false;
  }
  const double t1 = tel_.now();
  r.decode_s = t1 - t0;
  r.decode_cpu_s = thread_cpu_s() - c0;
  r.decoder = codec_for(item.input);
  r.width = w.src.width();
  r.height = w.src.height();
  r.format = to_string(w.src.format());
  tel_.add({-1, lane, StageKind::Decode, i, t0, t1, w.src.size_bytes()});
  std::string why;
  if (!can_encode(item.output, w.src.format(), &why)) return fail(i, fmt::format("{}: {}", item.output, why)), false;
  r.encoder = encoder_for(item.output, w.src.format());
  return true;
}

// Pixel memory from the pool, charged to the budget (`factor` times: room for the result too).
PixelAllocator BatchRun::budget_allocator(Charge& charge, std::size_t factor, bool wait) {
  return {[this, &charge, factor, wait](std::size_t bytes) -> void* {
            if (!wait) budget_.take(bytes * factor);
            else if (!budget_.acquire(bytes * factor, [this] { return aborting(); }))
              throw Error(ErrorKind::Cancelled, "cancelled");
            charge.add(bytes * factor);
            return pool_.allocate(bytes);
          },
          [this](void* p) { pool_.release(p); }};
}

// A JPEG for the GPU codecs: its bytes and header are read here, and it is queued for them
// (with --codec auto only while they have room; otherwise this thread decodes it on the CPU).
// False when this thread should decode it on the CPU after all.
bool BatchRun::send_to_gpu(int i, int lane, bool& counted, GpuPlace& place) {
  const BatchItem& item = plan_.items[i];
  FileResult& r = results_[i];
  const double t0 = tel_.now(), c0 = thread_cpu_s();
  Work w;
  w.index = i;
  JpegStreamInfo header;
  try {
    w.bytes = read_file(item.input, opt_.limits);
    header = jpeg_stream_info(w.bytes, item.input);
  } catch (const std::exception& e) {
    r.codec_note = fmt::format("not for the GPU codec: {}", e.what());
    return false;  // the CPU decoder says what is wrong, as for any file
  }
  // A stream cut short is left to the CPU decoder, which names it (a GPU decoder may not notice).
  const bool ends = w.bytes.size() >= 4 && std::search(w.bytes.end() - std::min<std::ptrdiff_t>(64, w.bytes.size()),
                                                       w.bytes.end(), kEoi.begin(), kEoi.end()) != w.bytes.end();
  if (!ends) {
    r.codec_note = "no end-of-image marker: decoded on the CPU";
    return false;
  }
  if (std::string why = gpu_codec_refuses(header); !why.empty()) {
    r.codec_note = fmt::format("{}: decoded on the CPU", why);
    return false;
  }
  const Format format{PixelType::U8, header.gray ? 1 : 3};
  std::string why;
  if (!can_encode(item.output, format, &why)) return false;  // the CPU path reports it
  try {
    codec_checks::check_pixel_limit(item.input, header.width, header.height, opt_.limits);
  } catch (const Error&) {
    return false;  // likewise
  }
  // Budget: the bytes, or what comes back when it is larger (the pixels): the bytes are dropped when
  // the result arrives (a JPEG stream of about their size).
  const bool jpeg_out = is_jpeg_path(item.output);
  const std::size_t back =
      jpeg_out ? w.bytes.size() : static_cast<std::size_t>(header.width) * header.height * format.pixel_bytes();
  const std::size_t charge = std::max(w.bytes.size(), back);
  if (!budget_.acquire(charge, [this] { return aborting(); })) return discard(i), true;
  w.charge = Charge(&budget_, charge);
  w.info.metadata = std::move(header.metadata);
  w.info.jpeg = header.coding;
  w.info.stored_channels = format.channels;
  r.width = header.width;
  r.height = header.height;
  r.format = to_string(format);
  r.decode_cpu_s = thread_cpu_s() - c0;
  tel_.add({-1, lane, StageKind::Decode, i, t0, tel_.now(), w.bytes.size()});
  waiting(i);
  if (opt_.codec == CodecChoice::Auto) {
    // Until a lane is ready every file is decoded on the CPU: one queued for a lane still starting
    // would wait for it (nvJPEG's start-up takes longer than a small batch).
    const bool lane_ready = gpu_lanes_ready_.load() > 0;
    if (lane_ready && to_gpu_.try_push(w)) return true;
    // Full: this thread decodes the file on the CPU, unless so many threads already do that
    // nobody would hand the GPU codecs their next files while those decodes run (a CPU decode
    // of a photo takes as long as the GPU codecs take to empty their queue); then it waits for room.
    if (cpu_decoding_.fetch_add(1) < cpu_decode_cap() || !lane_ready) {
      counted = true;
      return false;  // the charge is given back as w goes out of scope
    }
    --cpu_decoding_;
  }
  if (place.held()) place.push(std::move(w));
  else to_gpu_.push(std::move(w));
  return true;
}

}  // namespace tf::batch_detail
