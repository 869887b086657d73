// The decode stage of BatchRun (batch_run.hpp): decode threads take the files in turn and decode them on the CPU,
// or read a JPEG's bytes and header and queue it for the GPU codecs.
#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "../io/codec_checks.hpp"
#include "batch_run.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/io/stream.hpp"
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
  std::size_t cpu_share = 0;  // the room this file's CPU decode holds in cpu_decodes_ (--codec auto)
  if (!gpu_workers_.empty() && is_jpeg_path(item.input) && send_to_gpu(i, lane, cpu_share, place)) return;
  place.give_back();  // not for the GPU: no place held during a CPU decode
  if (stream_on_cpu(i, lane)) return;
  Work w;
  w.index = i;
  const bool decoded = decode_on_cpu(i, lane, w);
  if (cpu_share > 0) cpu_decodes_.give_back(cpu_share);
  if (!decoded) return;
  waiting(i);
  if (chain_.empty()) to_encode_.push(std::move(w));
  else to_filter_.push(std::move(w));
}

// A photo decoded whole and filtered into a second image holds both (72 MB for 12 MP RGB): within the budget a
// CPU-only batch then kept about 21 of 64 cores busy (4xH100 host, CPU only, 2026-11-27). Band by band a file
// holds a few rows (the same bytes out: the band path and the whole path write identical files).
bool BatchRun::stream_on_cpu(int i, int lane) {
  const BatchItem& item = plan_.items[i];
  // JPEG to JPEG, the photo batch: their reader and writer are one thread each (TIFF and PNG writers run
  // a worker per core, too many threads with a file on every core).
  if (!stream_files_ || !is_jpeg_path(item.input) || !is_jpeg_path(item.output)) return false;
  FileResult& r = results_[i];
  const int d = static_cast<int>(static_cast<std::size_t>(lane) % devices_.size());
  const DevicePtr& device = devices_[static_cast<std::size_t>(d)];
  StreamOptions so;
  so.limits = opt_.limits;
  so.write.quality = opt_.quality;
  so.write.subsampling = opt_.subsampling;
  so.write.strip = opt_.strip;
  // The bands and windows from the batch's pool, file after file: freshly mapped ones cost a 12-MP photo about
  // 1900 page faults and four munmaps (each a TLB shootdown on every core the process runs on).
  so.allocator = &pool_.allocator();
  std::size_t charge_bytes = kStreamFileBytes;
  try {
    // The header from the file's bytes: opening the JPEG reader here would gather a progressive file's
    // coefficients, which filter_file's reader then gathers again.
    const JpegStreamInfo header = jpeg_header(i);
    ImageInfo info;  // what the JPEG reader delivers: gray, or RGB (CMYK converted)
    info.width = header.width;
    info.height = header.height;
    info.format = Format{PixelType::U8, header.gray ? 1 : 3};
    info.codec = "libjpeg";
    info.access = RowAccess::Sequential;
    // Images filter_file would take whole and images large enough to split over every core go the whole path,
    // whose budget counts their pixels.
    const long long pixels = static_cast<long long>(info.width) * info.height;
    if (pixels >= (opt_.split_pixels > 0 ? opt_.split_pixels : kAutoSplitPixels) ||
        !whole_image_reason(info, item.output, chain_, {device}, opt_.job, false).empty())
      return false;
    // A small image holds no more than the whole path would charge it: its pixels and its result, as one
    // band (one window, one output), its stages in turn on this thread. Bands cut to fit that charge
    // started two threads a file: 10 000 photos of 96 x 64 made 20 000.
    const std::size_t whole_bytes = 2 * static_cast<std::size_t>(pixels) * info.format.pixel_bytes();
    if (whole_bytes <= charge_bytes) {
      charge_bytes = whole_bytes;
      so.band_rows = info.height;
    }
    so.memory_budget = charge_bytes;
    // A progressive file's reader holds its whole-image coefficients beside the bands.
    charge_bytes += header.coefficient_bytes;
  } catch (const std::exception&) {
    return false;  // the whole path names what is wrong with the file
  }
  Charge charge(&budget_, 0);
  if (!budget_.acquire(charge_bytes, [this] { return aborting(); })) return discard(i), true;
  charge.add(charge_bytes);
  JobOptions job = opt_.job;
  job.cancel = opt_.abort;
  job.progress = nullptr;
  const double t0 = tel_.now();
  try {
    make_parent_folder(item.output);
    const StreamReport rep = tf::filter_file(item.input, item.output, chain_, {device}, job, so);
    r.width = rep.width;
    r.height = rep.height;
    r.format = to_string(rep.format);
    r.decoder = rep.decoder;
    r.encoder = rep.encoder;
    r.decode_s = rep.decode_s;
    r.encode_s = rep.encode_s;
    // The reader's and writer's threads are the file's own: its CPU time is this thread's filtering and their
    // busy time, given to the codecs for their per-core speed.
    r.decode_cpu_s = rep.decode_s;
    r.encode_cpu_s = rep.encode_s;
    std::error_code ec;
    r.output_bytes = static_cast<std::size_t>(fs::file_size(item.output, ec));
    record(i, rep.job, false, d, t0);
    r.filter_s = rep.filter_s;
    // The bands' tiles keep no records of their own: the file's filtering, as one span of its busy time.
    tel_.add({d, 0, StageKind::Compute, i, t0, t0 + rep.filter_s, 0});
    tel_.add({-1, lane, StageKind::Decode, i, t0, t0 + rep.decode_s, item.input_bytes});
    tel_.add({-1, lane, StageKind::Encode, i, t0, tel_.now(), r.output_bytes});
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Cancelled) return discard(i), true;
    return fail(i, e.what()), true;
  } catch (const std::exception& e) {
    return fail(i, fmt::format("{}: {}", item.input, e.what())), true;
  }
  finish(i, Status::Ok);
  return true;
}

JpegStreamInfo BatchRun::jpeg_header(int i) {
  const BatchItem& item = plan_.items[i];
  std::vector<unsigned char> bytes = bytes_.take(item.input_bytes);
  read_file(item.input, opt_.limits, bytes);
  JpegStreamInfo header = jpeg_stream_info(bytes, item.input);
  bytes_.give(std::move(bytes));
  return header;
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
  // A progressive JPEG's reader gathers the whole image's coefficients when it opens, before the pixels: they
  // are charged for the decode's length.
  std::size_t coefficients = 0;
  try {
    if (is_jpeg_path(item.input)) coefficients = jpeg_header(i).coefficient_bytes;
  } catch (const std::exception&) {
    // the decode names what is wrong with the file
  }
  if (coefficients > 0) {
    if (!wait) budget_.take(coefficients);
    else if (!budget_.acquire(coefficients, [this] { return aborting(); })) return discard(i), false;
    w.charge.add(coefficients);
  }
  try {
    w.src = decode_file(item.input, opt_.limits, alloc, &w.info);
    w.charge.release(coefficients);
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
// (with --codec auto see gpu_or_cpu). False when this thread should decode it on the CPU after all.
bool BatchRun::send_to_gpu(int i, int lane, std::size_t& cpu_share, GpuPlace& place) {
  const BatchItem& item = plan_.items[i];
  FileResult& r = results_[i];
  const double t0 = tel_.now(), c0 = thread_cpu_s();
  Work w;
  w.index = i;
  JpegStreamInfo header;
  try {
    w.bytes = bytes_.take(item.input_bytes);
    read_file(item.input, opt_.limits, w.bytes);
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
  const std::size_t pixels = static_cast<std::size_t>(header.width) * header.height * format.pixel_bytes();
  const std::size_t charge = std::max(w.bytes.size(), is_jpeg_path(item.output) ? w.bytes.size() : pixels);
  // --codec auto takes it only once the file is queued: a file decoded here or waiting to be holds none.
  const bool auto_codec = opt_.codec == CodecChoice::Auto;
  if (!auto_codec && !charge_for_gpu(w, charge)) return discard(i), true;
  w.info.metadata = std::move(header.metadata);
  w.info.jpeg = header.coding;
  w.info.stored_channels = format.channels;
  r.width = header.width;
  r.height = header.height;
  r.format = to_string(format);
  r.decode_cpu_s = thread_cpu_s() - c0;
  tel_.add({-1, lane, StageKind::Decode, i, t0, tel_.now(), w.bytes.size()});
  waiting(i);
  // A CPU decode charges the pixels, twice with a filter (decode_on_cpu).
  if (auto_codec) return gpu_or_cpu(w, charge, std::max<std::size_t>(1, pixels * (chain_.empty() ? 1 : 2)), cpu_share);
  if (place.held()) place.push(std::move(w));
  else to_gpu_.push(std::move(w));
  return true;
}

// Takes the budget for a file queued for the GPU codecs; false when the batch aborts meanwhile.
bool BatchRun::charge_for_gpu(Work& w, std::size_t bytes) {
  if (!budget_.acquire(bytes, [this] { return aborting(); })) return false;
  w.charge = Charge(&budget_, bytes);
  return true;
}

// --codec auto: true when w went to the GPU codecs (or was discarded), false when this thread decodes it on the
// CPU, its image of `image_bytes` then held in cpu_decodes_ (`cpu_share`). Until a lane is ready nothing is
// queued: a file queued for a lane still starting would wait for it (nvJPEG's start-up, 1-3 s, is longer than a
// small batch), and a lane may never come (the queue would fill and block the decoders for good). The thread
// waits, holding no budget, for room among the CPU decodes (more would only wait for the budget inside the
// decoder, holding files the GPUs could take) or a ready lane. From then on every JPEG the GPUs take goes to
// them: CPU decodes beside the lanes slowed the lanes more than they added (2000 photos on 2xH200, 32 cores,
// 2026-11-27: 2.74-2.93 s in-process, against 3.16-3.78 s with the CPU codecs taking what the full queue could not).
bool BatchRun::gpu_or_cpu(Work& w, std::size_t charge, std::size_t image_bytes, std::size_t& cpu_share) {
  const int i = w.index;
  while (gpu_lanes_ready_.load() == 0) {
    if (cpu_decodes_.take(image_bytes, std::chrono::milliseconds(2))) return cpu_share = image_bytes, false;
    if (aborting()) return discard(i), true;  // cancelled only: the CPU decodes in flight finish and make room
  }
  if (!charge_for_gpu(w, charge)) return discard(i), true;
  to_gpu_.push(std::move(w));
  return true;
}

}  // namespace tf::batch_detail
