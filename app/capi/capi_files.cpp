// The C API's files: reading (tf_read_info, tf_read), writing (tf_writer_*, tf_write), streaming a
// file through a chain (tf_apply_file) and folders of them (tf_batch).
#include "capi_internal.hpp"

#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "tilefilter/batch/batch.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/io/stream.hpp"
#include "tilefilter/util/atomic_write.hpp"

struct tf_writer {
  std::unique_ptr<tf::ImageWriter> writer;
  int width = 0, height = 0;
  tf::Format format;
  int rows_written = 0;
};

using namespace tf;
using namespace tf::capi;

namespace {

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

}  // namespace

extern "C" {

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

}  // extern "C"
