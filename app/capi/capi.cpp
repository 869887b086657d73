// libtilefilter.so: the C API of tilefilter/tilefilter.h over core and the CUDA backend. Every entry
// point catches what core throws and turns it into a tf_status and the thread's message (the one
// line the CLI prints for the same error); nothing C++ crosses the boundary.
#include "tilefilter/tilefilter.h"

#include "capi_internal.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tilefilter/batch/batch.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/cuda_device_image.hpp"
#include "tilefilter/engine/device.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/engine/startup.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/filters/preset.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/io/stream.hpp"
#include "tilefilter/util/atomic_write.hpp"
#include "tilefilter/util/error.hpp"

#ifndef TF_VERSION
#define TF_VERSION "0.0.0"
#endif

struct tf_writer {
  std::unique_ptr<tf::ImageWriter> writer;
  int width = 0, height = 0;
  tf::Format format;
  int rows_written = 0;
};

namespace {

using namespace tf;
using namespace tf::capi;

thread_local std::string t_text;  // what a function hands out "until the thread's next call"

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(ErrorKind::InvalidArgument, message);
}

void install_once() {
  static std::once_flag once;
  std::call_once(once, [] { cuda::install_backend(); });
}

// ---- Images ----

Format format_of(int channels, int type) {
  require(channels == 1 || channels == 3 || channels == 4,
          fmt::format("images have 1, 3 or 4 channels, not {}", channels));
  require(type >= TF_U8 && type <= TF_F32, fmt::format("unknown pixel type {} (u8 = 0, u16 = 1, f32 = 2)", type));
  return {static_cast<PixelType>(type), channels};
}

ImageView view_of(const tf_image* image, const char* what) {
  require(image != nullptr, fmt::format("no {} image", what));
  const Format format = format_of(image->channels, image->type);
  require(image->width > 0 && image->height > 0,
          fmt::format("the {} image is {}x{}: both sides must be positive", what, image->width, image->height));
  require(image->data != nullptr, fmt::format("the {} image has no pixels", what));
  ImageView v{static_cast<std::byte*>(image->data), image->pitch, image->width, image->height, format};
  require(v.pitch >= v.row_bytes(),
          fmt::format("the {} image's row pitch {} is smaller than a row ({} bytes)", what, v.pitch, v.row_bytes()));
  return v;
}

bool overlaps(const ImageView& a, const ImageView& b) {
  const auto* a_end = a.data + a.pitch * static_cast<std::size_t>(a.height - 1) + a.row_bytes();
  const auto* b_end = b.data + b.pitch * static_cast<std::size_t>(b.height - 1) + b.row_bytes();
  return a.data < b_end && b.data < a_end;
}

void check_pair(const ImageView& src, const ImageView& dst) {
  require(src.width == dst.width && src.height == dst.height && src.format == dst.format,
          fmt::format("the output ({}x{} {}) must have the input's size and format ({}x{} {})", dst.width, dst.height,
                      to_string(dst.format), src.width, src.height, to_string(src.format)));
  require(!overlaps(src, dst), "the output overlaps the input");
}

// ---- Options and devices ----

Border border_of(const tf_chain& chain, const char* name, double value) {
  if (!name) return chain.border;
  auto mode = parse_border_mode(name);
  if (!mode)
    throw Error(ErrorKind::InvalidArgument, fmt::format("--border '{}': use one of {}", name, border_mode_names()));
  return {*mode, static_cast<float>(value)};
}

JobOptions job_of(const tf_chain& chain, const tf_options* o) {
  JobOptions job;
  job.border = chain.border;
  if (!o) return job;
  require(o->struct_size >= sizeof(tf_options), "tf_options: call tf_options_init first");
  job.border = border_of(chain, o->border, o->border_value);
  require(o->tile_width >= 0 && o->tile_height >= 0, "--tile: sizes must be positive");
  job.schedule.tile = {o->tile_width, o->tile_height};
  require(o->streams >= 0 && o->streams <= 64, "--streams must be between 1 and 64");
  job.schedule.streams_per_device = o->streams;
  job.exact = o->exact != 0;
  return job;
}

// Devices are made once per selection and reused: a job on GPUs takes that selection's lock (a
// device runs one job at a time); CPU workers are lent out, one set per concurrent job.
class DevicePool {
 public:
  struct Lease {
    DevicePool* pool = nullptr;
    std::string key;
    std::shared_ptr<DeviceSelection> selection;
    std::unique_lock<std::mutex> gpu_lock;
    Lease() = default;
    Lease(Lease&&) = default;
    ~Lease() {
      if (pool && selection && !gpu_lock.owns_lock()) pool->give(key, std::move(selection));
    }
  };

  Lease take(const std::string& spec, std::size_t memory_cap) {
    install_once();
    Lease lease;
    lease.pool = this;
    lease.key = fmt::format("{}@{}", spec, memory_cap);
    {
      std::lock_guard lock(mutex_);
      if (auto it = gpu_.find(lease.key); it != gpu_.end()) {
        lease.selection = it->second.selection;
        lease.gpu_lock = std::unique_lock(*it->second.mutex);
        return lease;
      }
      auto& list = free_[lease.key];
      if (!list.empty()) {
        lease.selection = std::move(list.back());
        list.pop_back();
        return lease;
      }
    }
    auto selection = std::make_shared<DeviceSelection>(select_devices(spec, memory_cap));
    const bool gpus = std::any_of(selection->devices.begin(), selection->devices.end(),
                                  [](const DevicePtr& d) { return d->info().kind == DeviceKind::Cuda; });
    if (!gpus) {
      lease.selection = std::move(selection);
      return lease;
    }
    std::mutex* gpu_mutex = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto& shared = gpu_[lease.key];
      if (!shared.selection) {
        shared.selection = selection;
        shared.mutex = std::make_unique<std::mutex>();
      }
      lease.selection = shared.selection;
      gpu_mutex = shared.mutex.get();
    }
    lease.gpu_lock = std::unique_lock(*gpu_mutex);
    return lease;
  }

 private:
  void give(const std::string& key, std::shared_ptr<DeviceSelection> selection) {
    std::lock_guard lock(mutex_);
    free_[key].push_back(std::move(selection));
  }
  struct Shared {
    std::shared_ptr<DeviceSelection> selection;
    std::unique_ptr<std::mutex> mutex;
  };
  std::mutex mutex_;
  std::map<std::string, std::vector<std::shared_ptr<DeviceSelection>>> free_;
  std::map<std::string, Shared> gpu_;
};

// Never destroyed: devices may hold CUDA resources that must not be freed after the runtime exits.
DevicePool& device_pool() {
  static auto* pool = new DevicePool;
  return *pool;
}

const char* devices_of(const tf_options* o) { return o && o->devices && *o->devices ? o->devices : "all"; }
std::size_t memory_of(const tf_options* o) { return o ? o->device_memory : 0; }

// ---- Files ----

WriteOptions write_options(const char* metadata_from, int quality, const char* compression, Metadata* metadata) {
  WriteOptions o;
  require(quality >= 0 && quality <= 100, fmt::format("--quality {}: use 1-100", quality));
  o.quality = quality;
  parse_compression(compression ? compression : "", o);
  if (metadata_from && *metadata_from) {
    const ImageInfo info = open_image(metadata_from)->info();
    *metadata = info.metadata;
    keep_input_coding(o, info.jpeg);  // a JPEG source's quality and subsampling
  }
  return o;
}

nlohmann::json param_json(const ParamInfo& p) {
  static const char* kinds[] = {"number", "integer", "choice", "bool", "path"};
  nlohmann::json j{{"name", p.name}, {"kind", kinds[static_cast<int>(p.kind)]}, {"help", p.help}};
  if (p.kind == ParamInfo::Kind::Choice || p.kind == ParamInfo::Kind::Path) {
    j["default"] = p.default_text;
    j["choices"] = p.choices;
  } else {
    j["min"] = p.min;
    j["max"] = p.max;
    j["default"] =
        p.kind == ParamInfo::Kind::Bool ? nlohmann::json(p.default_value != 0) : nlohmann::json(p.default_value);
  }
  return j;
}

std::vector<std::string> spec_list(const char* const* specs, int count) {
  require(count >= 0 && (count == 0 || specs), "no filter specs given");
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    require(specs[i] != nullptr, fmt::format("filter spec {} is NULL", i));
    out.emplace_back(specs[i]);
  }
  return out;
}

tf_chain* make_chain(std::vector<std::string> specs, const Border& border) {
  require(!specs.empty(), "give at least one filter (--filter SPEC) or a preset");
  auto c = std::make_unique<tf_chain>();
  c->chain = parse_chain(specs);
  c->specs = std::move(specs);
  c->border = border;
  c->border_name = to_string(border.mode);
  return c.release();
}

}  // namespace

extern "C" {

const char* tf_last_error(void) { return t_error.c_str(); }
const char* tf_version(void) { return TF_VERSION; }
int tf_api_version(void) { return TF_C_API_VERSION; }

tf_status tf_chain_new(const char* const* specs, int count, tf_chain** out) {
  return guarded([&] {
    require(out != nullptr, "tf_chain_new: no place for the chain");
    *out = nullptr;
    *out = make_chain(spec_list(specs, count), Border{});
  });
}

tf_status tf_chain_from_preset(const char* preset, const char* const* specs, int count, tf_chain** out) {
  return guarded([&] {
    require(out != nullptr, "tf_chain_from_preset: no place for the chain");
    require(preset && *preset, "no preset given");
    *out = nullptr;
    const Preset p = load_preset(find_preset(preset, bundled_folder("presets")));
    std::vector<std::string> all = to_specs(p.chain.filters);
    for (auto& s : spec_list(specs, count)) all.push_back(std::move(s));
    *out = make_chain(std::move(all), p.chain.border);
  });
}

void tf_chain_free(tf_chain* chain) { delete chain; }

void tf_chain_halo(const tf_chain* chain, int halo[4]) {
  const Halo h = chain ? chain_halo(chain->chain) : Halo{};
  halo[0] = h.left;
  halo[1] = h.top;
  halo[2] = h.right;
  halo[3] = h.bottom;
}

const char* tf_chain_border(const tf_chain* chain, double* value) {
  if (!chain) return "";
  if (value) *value = chain->border.value;
  return chain->border_name.c_str();
}

int tf_chain_length(const tf_chain* chain) { return chain ? static_cast<int>(chain->specs.size()) : 0; }
const char* tf_chain_spec(const tf_chain* chain, int index) {
  if (!chain || index < 0 || index >= static_cast<int>(chain->specs.size())) return nullptr;
  return chain->specs[index].c_str();
}

void tf_options_init(tf_options* o) {
  if (!o) return;
  *o = tf_options{};
  o->struct_size = sizeof(tf_options);
}

tf_status tf_filter(const tf_chain* chain, const tf_image* src, const tf_image* dst, const tf_options* options) {
  return guarded([&] {
    require(chain != nullptr, "no chain given");
    const ImageView s = view_of(src, "input"), d = view_of(dst, "output");
    check_pair(s, d);
    const JobOptions job = job_of(*chain, options);
    auto lease = device_pool().take(devices_of(options), memory_of(options));
    run_filter(s, d, chain->chain, lease.selection->devices, job);
  });
}

// "all" spreads a device image over every GPU only where the chain's work outweighs the copies between
// them (each band is read from and written back to the caller's GPU): on two H100s (2026-11-26) an
// 8192² RGBA8 image took 0.54 ms on one GPU and 1.08 split at σ 1.5 (22 multiply-adds a sample),
// 1.13 / 1.36 at σ 5 (62), 1.89 / 1.77 for a box of radius 20 (82), 4.55 / 3.13 at σ 15 (182).
static bool worth_splitting(const Chain& chain, const Format& format) {
  constexpr long long kFmasPerSampleByte = 80;
  return chain_fmas_per_pixel(chain) >= kFmasPerSampleByte * static_cast<long long>(bytes_per_sample(format.type));
}

tf_status tf_filter_device(const tf_chain* chain, const tf_image* src, const tf_image* dst, int device, void* stream,
                           const char* border, double border_value, const char* split_devices) {
  return guarded([&] {
    require(chain != nullptr, "no chain given");
    const ImageView s = view_of(src, "input"), d = view_of(dst, "output");
    check_pair(s, d);
    std::vector<int> split;
    const std::string spec = split_devices ? split_devices : "";
    if (spec == "all") {
      if (worth_splitting(chain->chain, s.format)) split = cuda::device_ordinals();
    } else if (!spec.empty()) {
      std::size_t at = 0;
      while (at <= spec.size()) {
        const std::size_t comma = std::min(spec.find(',', at), spec.size());
        const std::string item = spec.substr(at, comma - at);
        char* end = nullptr;
        const long v = std::strtol(item.c_str(), &end, 10);
        require(!item.empty() && !*end && v >= 0 && v < 1024,
                fmt::format("--devices '{}': expected all or GPU ordinals like 0,1", spec));
        split.push_back(static_cast<int>(v));
        at = comma + 1;
      }
    }
    cuda::filter_device_image(s, d, chain->chain, border_of(*chain, border, border_value), device, stream, split);
  });
}

tf_status tf_read_info(const char* path, tf_image_info* info) {
  return guarded([&] {
    require(path && info, "tf_read_info: no path or no place for the answer");
    const auto reader = open_image(path);
    const ImageInfo& i = reader->info();
    *info = tf_image_info{};
    info->width = i.width;
    info->height = i.height;
    info->channels = i.format.channels;
    info->type = static_cast<int>(i.format.type);
    info->stored_channels = i.stored_channels;
    info->orientation = i.metadata.orientation;
    info->has_exif = !i.metadata.exif.empty();
    info->has_icc = !i.metadata.icc.empty();
    info->has_xmp = !i.metadata.xmp.empty();
    std::snprintf(info->codec, sizeof info->codec, "%s", i.codec.c_str());
  });
}

tf_status tf_read(const char* path, const tf_image* dst) {
  return guarded([&] {
    require(path != nullptr, "tf_read: no path");
    const ImageView d = view_of(dst, "output");
    const auto reader = open_image(path);
    const ImageInfo& i = reader->info();
    require(i.width == d.width && i.height == d.height && i.format == d.format,
            fmt::format("{}: the image is {}x{} {}, the buffer {}x{} {}", path, i.width, i.height, to_string(i.format),
                        d.width, d.height, to_string(d.format)));
    reader->read_rows(0, d);
  });
}

tf_status tf_writer_new(const char* path, int width, int height, int channels, int type, const char* metadata_from,
                        int quality, const char* compression, tf_writer** out) {
  return guarded([&] {
    require(path && out, "tf_writer_new: no path or no place for the writer");
    *out = nullptr;
    require(width > 0 && height > 0, fmt::format("{}: the image is {}x{}", path, width, height));
    Metadata metadata;
    const WriteOptions o = write_options(metadata_from, quality, compression, &metadata);
    auto w = std::make_unique<tf_writer>();
    w->format = format_of(channels, type);
    w->width = width;
    w->height = height;
    w->writer = create_image(path, width, height, w->format, metadata, o);
    *out = w.release();
  });
}

tf_status tf_writer_write(tf_writer* writer, const tf_image* rows) {
  return guarded([&] {
    require(writer && writer->writer, "tf_writer_write: no writer (finished already?)");
    const ImageView r = view_of(rows, "rows");
    require(r.width == writer->width && r.format == writer->format,
            fmt::format("rows of {} pixels {} given to a writer of {} pixels {}", r.width, to_string(r.format),
                        writer->width, to_string(writer->format)));
    require(writer->rows_written + r.height <= writer->height,
            fmt::format("{} rows more than the image's {}", writer->rows_written + r.height - writer->height,
                        writer->height));
    writer->writer->write_rows(r);
    writer->rows_written += r.height;
  });
}

tf_status tf_writer_finish(tf_writer* writer) {
  return guarded([&] {
    require(writer && writer->writer, "tf_writer_finish: no writer (finished already?)");
    require(writer->rows_written == writer->height,
            fmt::format("{} of {} rows written: the image is not complete", writer->rows_written, writer->height));
    writer->writer->finish();
    writer->writer.reset();
  });
}

void tf_writer_free(tf_writer* writer) { delete writer; }

tf_status tf_write(const char* path, const tf_image* src, const char* metadata_from, int quality,
                   const char* compression) {
  tf_writer* w = nullptr;
  if (!src) return guarded([] { require(false, "tf_write: no image"); });
  tf_status s =
      tf_writer_new(path, src->width, src->height, src->channels, src->type, metadata_from, quality, compression, &w);
  if (s == TF_OK) s = tf_writer_write(w, src);
  if (s == TF_OK) s = tf_writer_finish(w);
  tf_writer_free(w);
  return s;
}

tf_status tf_apply_file(const tf_chain* chain, const char* input, const char* output, const tf_options* options,
                        int quality, const char* compression) {
  return guarded([&] {
    require(chain && input && output, "tf_apply_file: no chain, input or output");
    const JobOptions job = job_of(*chain, options);
    StreamOptions stream;
    Metadata unused;
    stream.write = write_options(nullptr, quality, compression, &unused);
    auto lease = device_pool().take(devices_of(options), memory_of(options));
    filter_file(input, output, chain->chain, lease.selection->devices, job, stream);
  });
}

tf_status tf_batch(const tf_chain* chain, const char* input_dir, const char* output_dir, const tf_options* options,
                   const char* format, int recursive, int resume, const char* report_json, tf_batch_result* result) {
  return guarded([&] {
    require(chain && input_dir && output_dir, "tf_batch: no chain, input folder or output folder");
    install_once();
    BatchOptions o;
    o.input_dir = input_dir;
    o.output_dir = output_dir;
    o.filters = chain->specs;
    o.recursive = recursive != 0;
    o.format = format && *format ? format : "same";
    o.devices = devices_of(options);
    o.device_memory = memory_of(options);
    o.job = job_of(*chain, options);
    o.resume = resume != 0;
    apply_batch_progress(o);
    const BatchReport report = run_batch(o);
    if (report_json && *report_json) {
      const std::string text = batch_report_json(report);
      write_file_atomically(report_json, {reinterpret_cast<const unsigned char*>(text.data()), text.size()});
    }
    if (result) {
      *result = tf_batch_result{};
      result->files_ok = report.count(FileResult::Status::Ok);
      result->files_failed = report.count(FileResult::Status::Failed);
      result->files_resumed = report.count(FileResult::Status::Resumed);
      result->files_cancelled = report.count(FileResult::Status::Cancelled);
      result->exit_code = report.exit_code();
      result->wall_s = report.wall_s;
      result->megapixels = report.megapixels;
    }
  });
}

const char* tf_filters_json(void) {
  static const std::string text = [] {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& f : filter_catalog()) {
      nlohmann::json params = nlohmann::json::array();
      for (const auto& p : f.params) params.push_back(param_json(p));
      all.push_back({{"name", f.name}, {"summary", f.summary}, {"params", params}});
    }
    return all.dump();
  }();
  return text.c_str();
}

const char* tf_presets_json(void) {
  static const std::string text = [] {
    nlohmann::json all = nlohmann::json::array();
    for (const std::filesystem::path& path : bundled_preset_files()) {
      try {
        const Preset p = load_preset(path.string());
        all.push_back({{"name", path.stem().string()},
                       {"title", p.name},
                       {"description", p.description},
                       {"path", path.string()},
                       {"specs", to_specs(p.chain.filters)},
                       {"border", to_string(p.chain.border.mode)}});
      } catch (const std::exception&) {  // a broken file is not a preset
      }
    }
    return all.dump();
  }();
  return text.c_str();
}

tf_status tf_devices_json(const char* devices, const char** out) {
  return guarded([&] {
    require(out != nullptr, "tf_devices_json: no place for the answer");
    install_once();
    const std::string spec = devices && *devices ? devices : "all";
    nlohmann::json all = nlohmann::json::array();
    auto lease = device_pool().take(spec, 0);
    for (const auto& d : lease.selection->devices) {
      const DeviceInfo& i = d->info();
      all.push_back({{"id", i.id},
                     {"name", i.name},
                     {"kind", i.kind == DeviceKind::Cuda ? "gpu" : "cpu"},
                     {"ordinal", i.ordinal},
                     {"memory_total", i.memory_total},
                     {"memory_free", i.memory_free},
                     {"multiprocessors", i.multiprocessors},
                     {"link", i.link}});
    }
    nlohmann::json answer{{"devices", all}, {"note", lease.selection->note}, {"cuda", cuda::runtime_description()}};
    t_text = answer.dump();
    *out = t_text.c_str();
  });
}

}  // extern "C"
