// The encode stage of BatchRun (batch_run.hpp): filtered files wait for the encode threads, which write the
// outputs inside OUT_DIR.
#include <filesystem>

#include <fmt/format.h>

#include "batch_run.hpp"
#include "tilefilter/util/error.hpp"

namespace fs = std::filesystem;

namespace tf::batch_detail {

// A filtered file: its source's memory goes back, and it waits for an encoder.
void BatchRun::send_to_encoder(Work&& w) {
  const std::size_t src_bytes = w.src.size_bytes();
  w.src = Image();
  w.charge.release(src_bytes);
  waiting(w.index);
  to_encode_.push(std::move(w));
}

namespace {

// The GPU encoder's stream with the input's metadata, as the CPU's JPEG writer writes it, into `into`.
void gpu_stream_with_metadata(const std::string& out, const Work& w, std::vector<unsigned char>& into) {
  try {
    jpeg_with_metadata(w.bytes, w.info.metadata, into);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::Io, fmt::format("{}: {}", out, e.what()));
  }
}

}  // namespace

void BatchRun::encode_loop(int lane) {
  while (auto w = to_encode_.pop()) {
    const int i = w->index;
    started(i);
    if (aborting()) {
      discard(i);
      continue;
    }
    const std::string& out = plan_.items[i].output;
    FileResult& r = results_[i];
    try {
      make_parent_folder(out);
      const double t0 = tel_.now(), c0 = thread_cpu_s();
      EncodeOptions eo;
      eo.quality = opt_.quality;
      eo.subsampling = opt_.subsampling;
      eo.strip = opt_.strip;
      eo.gray_alpha = w->info.stored_channels == 2;
      keep_input_compression(eo, w->info);
      if (w->encoded) write_gpu_stream(out, *w);
      else encode_file(out, chain_.empty() ? w->src.view() : w->dst.view(), eo, w->info.metadata, &r.write_note);
      const double t1 = tel_.now();
      if (!w->encoded) r.encode_s = t1 - t0;  // else the GPU's encode time, from its events
      r.encode_cpu_s = thread_cpu_s() - c0;
      std::error_code ec;
      r.output_bytes = static_cast<std::size_t>(fs::file_size(out, ec));
      tel_.add({-1, lane, StageKind::Encode, i, t0, t1, r.output_bytes});
    } catch (const std::exception& e) {
      fail(i, e.what());
      continue;
    }
    w.reset();  // give the memory back before telling anyone
    finish(i, Status::Ok);
  }
}

// A file the GPU encoded: its stream, with the input's metadata unless --strip; the buffers go back to bytes_.
void BatchRun::write_gpu_stream(const std::string& out, Work& w) {
  if (opt_.strip) {
    write_file_atomically(out, w.bytes);
  } else {
    std::vector<unsigned char> with = bytes_.take(w.bytes.size() + (64 << 10));
    gpu_stream_with_metadata(out, w, with);
    write_file_atomically(out, with);
    bytes_.give(std::move(with));
  }
  bytes_.give(std::move(w.bytes));
}

// Creates the output's folder, refusing any path that a symbolic link leads out of OUT_DIR.
void BatchRun::make_parent_folder(const std::string& out) const {
  const fs::path parent = fs::path(out).parent_path();
  auto check = [&] {
    if (!batch::resolves_within(parent.string(), out_root_))
      throw Error(ErrorKind::Io,
                  fmt::format("{}: folder leads outside {} (symbolic link); refusing to write", out, opt_.output_dir));
  };
  check();
  std::error_code ec;
  const bool made = fs::create_directories(parent, ec);
  if (ec)
    throw Error(ErrorKind::Io, fmt::format("{}: cannot create folder {} ({})", out, parent.string(), ec.message()));
  if (made) check();  // where the folders made just now lie (an existing one was checked above)
}

}  // namespace tf::batch_detail
