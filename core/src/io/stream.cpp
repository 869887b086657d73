// filter_file: three threads and two small pools of buffers. The reader fills input windows (a
// band's rows plus the halo rows above and below it), the calling thread filters each window into
// an output band on the devices, the writer encodes the bands in order. Two windows and two bands
// exist at any time, so decode, filtering and encode of neighbouring bands overlap while memory
// stays at four bands. Rows shared by neighbouring windows are carried over, never decoded twice.
#include "tilefilter/io/stream.hpp"

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/error.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf {

namespace {

// Codec state comes out of the budget before the pixel buffers are planned, and so do the CPU
// workers' tile working sets. The TIFF reader and writer run a worker per core, each holding a
// few strips of about 512 KiB (decoded and compressed): 3 MiB a core, measured on 2 and 16 cores.
// The PNG writer keeps 3 chunks a worker in flight (about 256 KiB of rows each and their deflate
// output) and one being filtered: under 2 MiB a core. The JPEG reader and writer and the PNG reader
// work on one thread each: the 8 MiB alone. (On 64 cores the per-core reserve, 200 MiB, left a
// batch's 16-MiB JPEG file no room for pixels: bands of 22 rows, the least its halo allows.)
std::size_t codec_reserve(bool every_core = true) {
  return (8ULL << 20) + (every_core ? (3ULL << 20) * static_cast<std::size_t>(default_threads()) : 0);
}

// Whether `info`'s reader or the writer named `encoder` runs a worker per core.
bool codecs_use_every_core(const ImageInfo& info, const std::string& encoder) {
  return info.codec == "libtiff" || encoder == "libtiff" || encoder == "libpng";
}

// Host memory the devices use per job: the CPU workers' padded tiles and float planes, or their row
// rings (cpu::worker_bytes). (GPU lanes keep their pinned staging buffers for the life of the device,
// whatever the job.)
std::size_t cpu_working_sets(const ImageView& shape, const Chain& chain, const std::vector<DevicePtr>& devices,
                             const JobOptions& job) {
  const TileJob probe{shape, shape, &chain, job.border, job.faults};
  std::size_t bytes = 0;
  for (const auto& d : devices) {
    if (d->info().kind != DeviceKind::Cpu) continue;
    const TileSize t = d->preferred_tile(probe);
    bytes += static_cast<std::size_t>(d->lanes()) *
             cpu::worker_bytes(probe, {std::min(t.width, shape.width), std::min(t.height, shape.height)});
  }
  return bytes;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// 48 MiB for pixels in flight (bands of ~200 rows of a 20000-pixel-wide RGB image), plus what codecs
// and CPU workers need. The codecs work on their own strips and chunks, whatever the band, so bigger
// bands buy little: 20000² RGB8 TIFF, gaussian, one H200 and 16 cores, 2026-11-23: 6.8 s and 468 MB
// peak with 160 MiB, 7.1 s and 250 MB with the smallest bands (--memory 64M).
constexpr std::size_t kBandPixelBytes = 48ULL << 20;
std::size_t default_budget(std::size_t working, bool codecs_on_every_core) {
  return kBandPixelBytes + codec_reserve(codecs_on_every_core) + working;
}

// A blocking queue of buffer indices between two stages; close() wakes everyone for shutdown.
class Channel {
 public:
  void push(int v) {
    {
      std::lock_guard lock(m_);
      q_.push_back(v);
    }
    cv_.notify_all();
  }
  std::optional<int> pop() {
    std::unique_lock lock(m_);
    cv_.wait(lock, [&] { return closed_ || !q_.empty(); });
    if (q_.empty()) return std::nullopt;
    const int v = q_.front();
    q_.pop_front();
    return v;
  }
  void close() {
    {
      std::lock_guard lock(m_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<int> q_;
  bool closed_ = false;
};

struct Band {
  int first = 0, end = 0;                // output rows
  int window_first = 0, window_end = 0;  // input rows held
};

}  // namespace

std::size_t default_stream_budget() { return kBandPixelBytes + codec_reserve(); }

int band_rows_for_budget(int width, int height, const Format& format, const Halo& halo, std::size_t budget,
                         bool codecs_on_every_core) {
  const std::size_t row = static_cast<std::size_t>(width) * format.pixel_bytes();
  const std::size_t reserve = codec_reserve(codecs_on_every_core);
  const std::size_t pixels = budget > reserve ? budget - reserve : 0;
  // Two input windows of (rows + halo) rows and two output bands of rows.
  const long long halo_rows = 2LL * (halo.top + halo.bottom);
  const long long rows = (static_cast<long long>(pixels / std::max<std::size_t>(row, 1)) - halo_rows) / 4;
  return static_cast<int>(std::clamp<long long>(rows, std::min(16, height), height));
}

namespace {

void add_note(StreamReport& report, const std::string& note) {
  report.note += (report.note.empty() ? "" : "; ") + note;
}

// What filter_file decides before it reads a pixel: how the output is written and the band height.
struct FilePlan {
  std::unique_ptr<ImageReader> reader;
  ImageInfo info;
  Metadata metadata;
  WriteOptions write;
  Halo halo;
  bool rotate = false;  // --autorotate on an image that is not upright: filtered whole
  int rows = 0;         // output rows a band, the image's height for one band
};

// Opens `input` and plans the bands: one band where the image must be filtered whole (and the
// report's note says why), else as many rows as the memory budget allows.
FilePlan open_and_plan(const std::string& input, const std::string& output, const Chain& chain,
                       const std::vector<DevicePtr>& devices, const JobOptions& job, const StreamOptions& options,
                       StreamReport& report) {
  FilePlan plan;
  plan.reader = open_image(input, options.limits);
  plan.info = plan.reader->info();
  const ImageInfo& info = plan.info;
  const int W = info.width, H = info.height;
  report.width = W;
  report.height = H;
  report.format = info.format;
  report.decoder = info.codec;
  report.note = info.note;

  plan.metadata = options.write.strip ? Metadata{} : info.metadata;
  plan.write = options.write;
  plan.write.gray_alpha = plan.write.gray_alpha || info.stored_channels == 2;
  keep_input_compression(plan.write, info);
  report.encoder = encoder_for(output, info.format);

  const Halo halo = plan.halo = chain_halo(chain);
  ImageView shape;
  shape.width = W;
  shape.height = H;
  shape.format = info.format;
  plan.rotate = options.autorotate && info.metadata.orientation != 1;
  const std::string whole = whole_image_reason(info, output, chain, devices, job, options.autorotate);
  const std::size_t working = cpu_working_sets(shape, chain, devices, job);
  const bool every_core = codecs_use_every_core(info, report.encoder);
  const std::size_t budget = options.memory_budget ? options.memory_budget : default_budget(working, every_core);
  // A band at least twice its halo tall: the rows a border mirrors at the top and bottom edges (and a
  // chain's intermediate borders) then lie inside the first and last windows.
  const int min_rows = 2 * (halo.top + halo.bottom) + 2;
  int rows = options.band_rows > 0
                 ? options.band_rows
                 : band_rows_for_budget(W, H, info.format, halo, budget > working ? budget - working : 0, every_core);
  plan.rows = std::min(std::max(rows, min_rows), H);
  if (!whole.empty()) {
    plan.rows = H;
    add_note(report, whole);
  }
  return plan;
}

}  // namespace

std::string whole_image_reason(const ImageInfo& info, const std::string& output, const Chain& chain,
                               const std::vector<DevicePtr>& devices, const JobOptions& job, bool autorotate) {
  ImageView shape;
  shape.width = info.width;
  shape.height = info.height;
  shape.format = info.format;
  if (autorotate && info.metadata.orientation != 1)
    return fmt::format("--autorotate turns the whole image (orientation {})", info.metadata.orientation);
  if (info.access == RowAccess::Whole) return fmt::format("{} reads this file whole", info.codec);
  if (!writer_streams(output)) return "the output format is written whole";
  // Wrap borders read rows from the far end of the image, which no band holds.
  if (job.border.mode == BorderMode::Wrap) return "the wrap border reads the far edge of the image: filtered whole";
  if (!runs_in_one_pass(shape, chain, devices, job))
    return "this chain runs filter by filter over the whole image (wrap border or tiny image)";
  return {};
}

namespace {

// The whole image, turned upright, filtered and written in one band.
void filter_rotated(FilePlan& plan, const std::string& output, const Chain& chain,
                    const std::vector<DevicePtr>& devices, const JobOptions& job, StreamReport& report) {
  const auto t0 = std::chrono::steady_clock::now();
  const Image src = apply_orientation(read_whole(*plan.reader).view(), plan.info.metadata.orientation);
  report.decode_s = seconds_since(t0);
  plan.metadata.orientation = 1;
  if (!plan.metadata.exif.empty()) plan.metadata.exif.clear();  // the camera's tag would turn it again
  auto writer = create_image(output, src.width(), src.height(), src.format(), plan.metadata, plan.write);
  const auto t1 = std::chrono::steady_clock::now();
  Image dst(src.width(), src.height(), src.format());
  report.job = run_filter(src.view(), dst.view(), chain, devices, job);
  report.filter_s = seconds_since(t1);
  const auto t2 = std::chrono::steady_clock::now();
  writer->write_rows(dst.view());
  writer->finish();
  if (!writer->note().empty()) add_note(report, writer->note());
  report.encode_s = seconds_since(t2);
  report.width = src.width();
  report.height = src.height();
  report.bands = 1;
  report.band_rows = src.height();
  report.planned_bytes = src.size_bytes() * 2;
}

std::vector<Band> plan_bands(int height, int rows, const Halo& halo) {
  std::vector<Band> bands;
  for (int y = 0; y < height; y += rows) {
    Band b{y, std::min(height, y + rows), 0, 0};
    b.window_first = std::max(0, b.first - halo.top);
    b.window_end = std::min(height, b.end + halo.bottom);
    bands.push_back(b);
  }
  return bands;
}

// The three stages over the bands and their two pools of buffers: read_windows and write_bands each
// on a thread of their own, filter_bands on the caller's (all three in turn there for one band). A
// stage that fails closes every channel, so the others stop; the first error is kept and rethrown by
// run().
class BandPipeline {
 public:
  BandPipeline(FilePlan& plan, std::vector<Band> bands, ImageWriter& writer, StreamReport& report,
               const PixelAllocator& alloc)
      : plan_(plan), bands_(std::move(bands)), writer_(writer), report_(report) {
    const int W = plan.info.width, H = plan.info.height;
    const int window_rows = std::min(H, plan.rows + plan.halo.top + plan.halo.bottom);
    const int buffers = bands_.size() > 1 ? 2 : 1;
    for (int i = 0; i < buffers; ++i) {
      windows_.emplace_back(W, window_rows, plan.info.format, alloc);
      outs_.emplace_back(W, plan.rows, plan.info.format, alloc);
      free_windows_.push(i);
      free_outs_.push(i);
    }
    window_band_.assign(buffers, -1);
    report.planned_bytes = buffers * (windows_[0].size_bytes() + outs_[0].size_bytes());
  }

  void run(const Chain& chain, const std::vector<DevicePtr>& devices, const JobOptions& job,
           const StreamOptions& options) {
    if (bands_.size() == 1) {
      // One band has nothing to overlap: its stages run in turn here, and a batch of small images
      // does not start and join two threads a file.
      guard([&] { read_windows(); });
      guard([&] { filter_bands(chain, devices, job, options); });
      guard([&] { write_bands(); });
    } else {
      std::thread read_thread([&] { guard([&] { read_windows(); }); });
      std::thread write_thread([&] { guard([&] { write_bands(); }); });
      guard([&] { filter_bands(chain, devices, job, options); });
      read_thread.join();
      write_thread.join();
    }
    if (error_) std::rethrow_exception(error_);
  }

 private:
  template <class F> void guard(F&& f) {
    try {
      f();
    } catch (...) {
      fail(std::current_exception());
    }
  }

  void fail(std::exception_ptr e) {
    {
      std::lock_guard lock(error_mutex_);
      if (!error_) error_ = e;
    }
    failed_ = true;
    for (Channel* c : {&free_windows_, &full_windows_, &free_outs_, &full_outs_}) c->close();
  }

  void read_windows() {
    int next_row = 0;  // rows read so far: sequential readers go top to bottom exactly once
    int previous = -1;
    for (int k = 0; k < static_cast<int>(bands_.size()) && !failed_; ++k) {
      const auto slot = free_windows_.pop();
      if (!slot) return;
      const Band& b = bands_[k];
      const auto t0 = std::chrono::steady_clock::now();
      const ImageView win = windows_[*slot].view();
      int y = b.window_first;
      if (previous >= 0 && next_row > y) {  // rows the previous window holds already
        const Band& p = bands_[window_band_[previous]];
        for (; y < next_row; ++y)
          std::memcpy(win.row(y - b.window_first), windows_[previous].view().row(y - p.window_first), win.row_bytes());
      }
      if (b.window_end > y) {
        ImageView rest = win;
        rest.data = win.row(y - b.window_first);
        rest.height = b.window_end - y;
        plan_.reader->read_rows(y, rest);
      }
      next_row = b.window_end;
      report_.decode_s += seconds_since(t0);
      window_band_[*slot] = k;
      previous = *slot;
      full_windows_.push(*slot);
    }
  }

  void write_bands() {
    for (int k = 0; k < static_cast<int>(bands_.size()); ++k) {
      const auto slot = full_outs_.pop();
      if (!slot) return;
      const auto t0 = std::chrono::steady_clock::now();
      ImageView band = outs_[*slot].view();
      band.height = bands_[k].end - bands_[k].first;
      writer_.write_rows(band);
      report_.encode_s += seconds_since(t0);
      free_outs_.push(*slot);
    }
  }

  void filter_bands(const Chain& chain, const std::vector<DevicePtr>& devices, const JobOptions& job,
                    const StreamOptions& options) {
    const int H = plan_.info.height;
    // The window that band k's reader fills is released only after band k+1's window is read, so
    // the reader can copy the shared rows from it: windows are recycled one band late.
    std::optional<int> held;
    for (int k = 0; k < static_cast<int>(bands_.size()); ++k) {
      const auto win = full_windows_.pop();
      if (!win) break;
      const auto out = free_outs_.pop();
      if (!out) break;
      const Band& b = bands_[k];
      const auto t0 = std::chrono::steady_clock::now();
      JobOptions o = job;
      o.first_row = b.first;
      o.end_row = b.end;
      const ImageView src = window_view(windows_[*win].view(), b.window_first, H);
      ImageView band_rows = outs_[*out].view();
      band_rows.height = b.end - b.first;
      const ImageView dst = window_view(band_rows, b.first, H);
      JobReport r = run_filter(src, dst, chain, devices, o);
      report_.filter_s += seconds_since(t0);
      add_band(k, r);
      full_outs_.push(*out);
      if (held) free_windows_.push(*held);
      held = *win;
      if (options.progress) options.progress(static_cast<double>(b.end) / H);
    }
    if (held) free_windows_.push(*held);
  }

  // Band k's tiles per device and failures into the report's job.
  void add_band(int k, const JobReport& r) {
    if (k == 0) {
      report_.job = r;
      return;
    }
    JobReport& sum = report_.job;
    sum.tiles += r.tiles;
    for (std::size_t d = 0; d < r.tiles_per_device.size() && d < sum.tiles_per_device.size(); ++d)
      sum.tiles_per_device[d] += r.tiles_per_device[d];
    sum.failures.insert(sum.failures.end(), r.failures.begin(), r.failures.end());
  }

  FilePlan& plan_;
  const std::vector<Band> bands_;
  ImageWriter& writer_;
  StreamReport& report_;
  std::vector<Image> windows_, outs_;
  std::vector<int> window_band_;  // the band each window holds
  Channel free_windows_, full_windows_, free_outs_, full_outs_;
  std::mutex error_mutex_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

}  // namespace

StreamReport filter_file(const std::string& input, const std::string& output, const Chain& chain,
                         const std::vector<DevicePtr>& devices, const JobOptions& job, const StreamOptions& options) {
  const auto t_start = std::chrono::steady_clock::now();
  StreamReport report;
  FilePlan plan = open_and_plan(input, output, chain, devices, job, options, report);
  if (plan.rotate) {
    filter_rotated(plan, output, chain, devices, job, report);
    report.wall_s = seconds_since(t_start);
    return report;
  }
  std::vector<Band> bands = plan_bands(plan.info.height, plan.rows, plan.halo);
  report.bands = static_cast<int>(bands.size());
  report.band_rows = plan.rows;
  auto writer = create_image(output, plan.info.width, plan.info.height, plan.info.format, plan.metadata, plan.write);
  BandPipeline(plan, std::move(bands), *writer, report, options.allocator ? *options.allocator : default_allocator())
      .run(chain, devices, job, options);
  if (job.cancel && job.cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
  const auto t0 = std::chrono::steady_clock::now();
  writer->finish();
  if (!writer->note().empty()) add_note(report, writer->note());
  report.encode_s += seconds_since(t0);
  report.job.wall_s = report.filter_s;
  report.wall_s = seconds_since(t_start);
  return report;
}

Image apply_orientation(const ImageView& src, int orientation) {
  const bool swap = orientation >= 5 && orientation <= 8;
  const int w = swap ? src.height : src.width, h = swap ? src.width : src.height;
  Image dst(w, h, src.format);
  const std::size_t ps = src.format.pixel_bytes();
  for (int y = 0; y < h; ++y) {
    std::byte* out = dst.view().row(y);
    for (int x = 0; x < w; ++x) {
      // Where output pixel (x, y) comes from in the stored image (EXIF 2.3, tag 274).
      int sx = x, sy = y;
      switch (orientation) {
        case 2: sx = src.width - 1 - x; break;
        case 3:
          sx = src.width - 1 - x;
          sy = src.height - 1 - y;
          break;
        case 4: sy = src.height - 1 - y; break;
        case 5:
          sx = y;
          sy = x;
          break;
        case 6:
          sx = y;
          sy = src.height - 1 - x;
          break;
        case 7:
          sx = src.width - 1 - y;
          sy = src.height - 1 - x;
          break;
        case 8:
          sx = src.width - 1 - y;
          sy = x;
          break;
        default: break;
      }
      std::memcpy(out + x * ps, src.row(sy) + static_cast<std::size_t>(sx) * ps, ps);
    }
  }
  return dst;
}

}  // namespace tf
