// JPEG codecs side by side: stb vs TurboJPEG, decode and encode of one file, one thread, in the
// same process: tf_jpeg_bench IN.jpg [REPEATS] [QUALITY...]. Prints one JSON object.
// Decode = tf::decode_jpeg_with: header and limit checks, the Image allocation (default allocator)
// and the decode (for stb also its copy into the Image). Encode = tf::encode_jpeg_with of the
// stb-decoded pixels to memory (no file write). Timing: one warm-up, then median, min and max of
// wall time, and the median of the thread's CPU time: on a shared machine the CPU time still gives
// the per-core rate when other processes take turns on the core ("cpu_mpix_per_s").
#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iterator>
#include <thread>

#include <fmt/format.h>

#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/error.hpp"

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Times {
  std::vector<double> wall, cpu;  // sorted
};

template <class F> Times time_runs(int repeats, F&& f) {
  f();  // warm-up
  Times t;
  for (int i = 0; i < repeats; ++i) {
    const auto a = std::chrono::steady_clock::now();
    const double c = thread_cpu_seconds();
    f();
    t.cpu.push_back(thread_cpu_seconds() - c);
    t.wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.wall.begin(), t.wall.end());
  std::sort(t.cpu.begin(), t.cpu.end());
  return t;
}

std::string stats(const Times& t, double mpix) {
  const double med = t.wall[t.wall.size() / 2], cpu = t.cpu[t.cpu.size() / 2];
  return fmt::format(
      R"({{"median_s": {:.4f}, "min_s": {:.4f}, "max_s": {:.4f}, "mpix_per_s": {:.1f}, "cpu_s": {:.4f}, "cpu_mpix_per_s": {:.1f}}})",
      med, t.wall.front(), t.wall.back(), mpix / med, cpu, mpix / cpu);
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    fmt::print(stderr, "usage: tf_jpeg_bench IN.jpg [REPEATS] [QUALITY...]\n");
    return 2;
  }
  const std::string path = argv[1];
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 7;
  std::vector<int> qualities;
  for (int i = 3; i < argc; ++i) qualities.push_back(std::atoi(argv[i]));
  if (qualities.empty()) qualities = {95, 85};  // 4:4:4 and 4:2:0 in both encoders

  std::ifstream in(path, std::ios::binary);
  const std::vector<unsigned char> jpeg{std::istreambuf_iterator<char>(in), {}};
  if (jpeg.empty()) throw tf::Error(tf::ErrorKind::Io, fmt::format("{}: cannot read", path));
  const tf::Image source = tf::decode_jpeg_with("stb", jpeg, path);
  const double mpix = static_cast<double>(source.pixels()) / 1e6;

  std::vector<std::string> codecs = {"stb"};
  if (tf::have_turbojpeg()) codecs.push_back("turbojpeg");
  std::vector<std::string> entries;
  for (const auto& codec : codecs) {
    std::string entry = fmt::format(R"(  "{}": {{"decode": {})", codec,
                                    stats(time_runs(repeats, [&] { tf::decode_jpeg_with(codec, jpeg, path); }), mpix));
    for (int q : qualities) {
      std::size_t bytes = 0;
      const auto t = time_runs(repeats, [&] { bytes = tf::encode_jpeg_with(codec, source.view(), q).size(); });
      entry += fmt::format(R"(, "encode_q{}": {}, "encode_q{}_bytes": {})", q, stats(t, mpix), q, bytes);
    }
    entries.push_back(entry + "}");
  }
  fmt::print(
      "{{\"file\": \"{}\", \"image\": \"{}x{} {} u8\", \"file_bytes\": {}, \"repeats\": {}, \"threads\": 1, "
      "\"cores\": {},\n{}}}\n",
      path, source.width(), source.height(), source.format().channels == 1 ? "gray" : "RGB", jpeg.size(), repeats,
      std::max(1u, std::thread::hardware_concurrency()), fmt::join(entries, ",\n"));
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "tf_jpeg_bench: {}\n", e.what());
  return 1;
}
