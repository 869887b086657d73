// Probe, not a test: do the GPU codec lanes of one process slow each other with nothing else running? The
// batch's lanes do 7.0-7.5 Gpix/s on one H200 once ready and 5.9-6.3 each on two, and two processes of one
// GPU each lose as much. Here the files are in memory and there are no decode, encode or file threads: each
// named GPU gets one lane (tf::make_gpu_jpeg_lane, as the batch makes them), fed by two threads as the
// batch's feed_lane does (one begins a batch while the other ends the one before), every lane on the same
// files, all lanes starting together once all are ready.
//
//   tf_lane_probe DIR GPUS [PASSES] [BATCH]     e.g. tf_lane_probe photos 0,1 3 32
//
// Prints one JSON line per GPU (files, seconds from the common start, Gpix/s, the lane's steps) and one for
// the whole.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/engine/device_selection.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/gpu_jpeg.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct File {
  std::vector<unsigned char> bytes;
  std::string name;
  double pixels = 0;
};

std::vector<File> read_jpegs(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".jpg") names.push_back(e.path().string());
  std::sort(names.begin(), names.end());
  std::vector<File> files;
  for (const auto& n : names) {
    std::ifstream in(n, std::ios::binary);
    File f;
    f.bytes.assign(std::istreambuf_iterator<char>(in), {});
    f.name = n;
    const tf::JpegStreamInfo info = tf::jpeg_stream_info(f.bytes, n);
    f.pixels = static_cast<double>(info.width) * info.height;
    files.push_back(std::move(f));
  }
  return files;
}

struct Result {
  int files = 0;
  double pixels = 0, end_s = 0, half_s = 0;  // half_s: when half the files were done
  std::string error;
};

// Encoded streams into kept vectors, as the batch's BytesPool gives them. A fresh vector a file halves a lane's
// rate: its pages fault in on the lane's own thread as the stream is copied back (one H200, 2026-11-29: 3.8-4.1
// Gpix/s against 7.1-7.4).
struct StreamPool {
  std::mutex m;
  std::vector<std::vector<unsigned char>> free;
  std::vector<unsigned char> take(std::size_t n) {
    std::lock_guard lock(m);
    if (free.empty()) return std::vector<unsigned char>(n);
    auto v = std::move(free.back());
    free.pop_back();
    v.clear();
    return v;
  }
  void give(std::vector<unsigned char>&& v) {
    std::lock_guard lock(m);
    free.push_back(std::move(v));
  }
};

// One lane through `passes` passes over the files, in batches, two threads as the batch's feed_lane.
Result run_lane(tf::GpuJpegLane& lane, const std::vector<File>& files, const tf::Chain& chain, int passes, int batch,
                Clock::time_point t0) {
  Result r;
  StreamPool streams;
  std::vector<std::vector<tf::GpuJpegJob>> batches;
  std::vector<tf::GpuJpegJob> jobs;
  for (int p = 0; p < passes; ++p)
    for (const File& f : files) {
      tf::GpuJpegJob job;
      job.jpeg = f.bytes;
      job.name = f.name;
      job.chain = &chain;
      job.quality = 90;
      job.subsampling = tf::ChromaSubsampling::S420;
      job.stream_buffer = [&streams](std::size_t n) { return streams.take(n); };
      jobs.push_back(std::move(job));
      r.pixels += f.pixels;
      if (static_cast<int>(jobs.size()) == batch) batches.push_back(std::move(jobs)), jobs.clear();
    }
  if (!jobs.empty()) batches.push_back(std::move(jobs));
  const int total = passes * static_cast<int>(files.size());
  std::mutex m;
  std::condition_variable changed;
  std::optional<std::unique_ptr<tf::GpuJpegPending>> handoff;
  bool no_more = false;
  std::thread ender([&] {
    for (;;) {
      std::unique_ptr<tf::GpuJpegPending> p;
      {
        std::unique_lock lock(m);
        changed.wait(lock, [&] { return handoff.has_value() || no_more; });
        if (!handoff) return;
        p = std::move(*handoff);
        handoff.reset();
      }
      changed.notify_all();
      for (auto& o : lane.end_batch(std::move(p))) {
        if (!o.error.empty() && r.error.empty()) r.error = o.error;
        streams.give(std::move(o.result.jpeg));
        if (++r.files == total / 2) r.half_s = std::chrono::duration<double>(Clock::now() - t0).count();
      }
    }
  });
  for (const auto& b : batches) {
    auto p = lane.begin_batch(b);
    std::unique_lock lock(m);
    changed.wait(lock, [&] { return !handoff.has_value(); });
    handoff = std::move(p);
    changed.notify_all();
  }
  {
    std::lock_guard lock(m);
    no_more = true;
  }
  changed.notify_all();
  ender.join();
  r.end_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tf_lane_probe DIR GPUS [PASSES] [BATCH]\n");
    return 2;
  }
  const int passes = argc > 3 ? std::atoi(argv[3]) : 3;
  const int batch = argc > 4 ? std::atoi(argv[4]) : 32;
  tf::cuda::install_backend();
  const std::vector<File> files = read_jpegs(argv[1]);
  const tf::Chain chain = tf::parse_chain({"gaussian:sigma=1.5"});
  tf::DeviceSelection sel = tf::select_devices(argv[2]);
  std::vector<std::unique_ptr<tf::GpuJpegLane>> lanes;
  for (const auto& d : sel.devices) {
    std::string why;
    lanes.push_back(tf::make_gpu_jpeg_lane(*d, &why));
    if (!lanes.back()) throw std::runtime_error(fmt::format("{}: no lane ({})", d->info().id, why));
  }
  // A warm-up batch each, so that every lane's buffers are sized before the clock starts.
  for (auto& lane : lanes)
    (void)run_lane(*lane, {files.begin(), files.begin() + std::min<std::size_t>(files.size(), batch)}, chain, 1, batch,
                   Clock::now());
  const auto t0 = Clock::now();
  std::vector<Result> results(lanes.size());
  std::vector<std::thread> threads;
  for (std::size_t g = 0; g < lanes.size(); ++g)
    threads.emplace_back([&, g] { results[g] = run_lane(*lanes[g], files, chain, passes, batch, t0); });
  for (auto& t : threads) t.join();
  double pixels = 0, end = 0;
  for (std::size_t g = 0; g < lanes.size(); ++g) {
    const Result& r = results[g];
    const tf::GpuJpegSteps st = lanes[g]->steps();
    fmt::print(
        "{{\"gpu\":\"{}\",\"gpus\":{},\"files\":{},\"seconds\":{:.3f},\"half_s\":{:.3f},\"gpix_per_s\":{:.2f},"
        "\"steps\":{{\"parse\":{:.3f},\"hw_decode\":{:.3f},\"cuda_decode\":{:.3f},\"queue\":{:.3f},\"wait\":{:.3f},"
        "\"retrieve\":{:.3f}}},\"error\":\"{}\"}}\n",
        sel.devices[g]->info().id, lanes.size(), r.files, r.end_s, r.half_s, r.pixels / r.end_s / 1e9, st.parse_s,
        st.hw_decode_s, st.cuda_decode_s, st.queue_s, st.wait_s, st.retrieve_s, r.error);
    pixels += r.pixels;
    end = std::max(end, r.end_s);
  }
  fmt::print("{{\"all\":true,\"gpus\":{},\"seconds\":{:.3f},\"gpix_per_s\":{:.2f}}}\n", lanes.size(), end,
             pixels / end / 1e9);
  std::fflush(stdout);
  std::_Exit(0);
} catch (const std::exception& e) {
  std::fprintf(stderr, "tf_lane_probe: %s\n", e.what());
  return 1;
}
