// CPU backend throughput next to OpenCV, measured in the same process on the same image:
// tf_cpu_bench [SIZE=4096] [REPEATS=5] [ONLY: a part of a workload's name]. Three workloads on a SIZE² RGBA u8 image,
// reflect101 border:
//   gaussian sigma 1.5 (9 taps a side)   vs cv::GaussianBlur(9x9, 1.5)
//   gaussian sigma 5 (31 taps a side)    vs cv::GaussianBlur(31x31, 5) — OpenCV's own size for sigma 5 on u8
//   a 9x9 non-separable kernel (2-D)     vs cv::filter2D with the same float taps
// each on one thread (cpu:1 vs cv::setNumThreads(1)) and on every core (cpu vs every core). The runs
// are paired: every repeat times TileFilter and then OpenCV back to back, so load from other processes
// on a shared machine hits both alike; medians, min and max over the repeats, and the ratio of the
// medians — of wall time, and of process CPU time (what a run costs a core, robust to other jobs). Includes no codecs;
// the image is in host memory. Prints one JSON object, and which vector path the CPU backend took ("simd").
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/image/testimage.hpp"

namespace {

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Wall seconds, and CPU seconds of the whole process (every thread) over the same call.
std::pair<double, double> seconds(const std::function<void()>& f) {
  const auto a = std::chrono::steady_clock::now();
  const double c = process_cpu_seconds();
  f();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count(), process_cpu_seconds() - c};
}

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Wall time, and Mpix per CPU-second (process CPU time): on a machine shared with other jobs the
// wall time of one thread includes waiting for a core, the CPU time does not.
std::string stats(std::vector<double> t, const std::vector<double>& cpu, double mpix) {
  std::sort(t.begin(), t.end());
  const double med = t[t.size() / 2], cpu_med = median(cpu);
  return fmt::format(
      R"({{"median_s": {:.4f}, "min_s": {:.4f}, "max_s": {:.4f}, "mpix_per_s": {:.1f}, "cpu_s": {:.4f}, "mpix_per_cpu_s": {:.1f}}})",
      med, t.front(), t.back(), mpix / med, cpu_med, mpix / cpu_med);
}

// A 9x9 kernel of rank > 1 (not separable): a Gaussian plus a ripple, normalized.
tf::Kernel nonseparable_9x9() {
  std::vector<std::vector<double>> rows(9, std::vector<double>(9));
  double sum = 0;
  for (int y = 0; y < 9; ++y)
    for (int x = 0; x < 9; ++x) {
      const double dx = x - 4, dy = y - 4;
      rows[y][x] = std::exp(-(dx * dx + dy * dy) / 8.0) + 0.05 * ((x * 7 + y * 3) % 5) - 0.1 * (x == y);
      sum += rows[y][x];
    }
  for (auto& r : rows)
    for (auto& v : r) v /= sum;
  return tf::Kernel::from_rows(rows);
}

}  // namespace

int main(int argc, char** argv) {
  const int size = argc > 1 ? std::atoi(argv[1]) : 4096;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string only = argc > 3 ? argv[3] : "";  // run only the workloads whose name holds this
  const tf::Image src = tf::make_test_image(size, size, tf::Format{tf::PixelType::U8, 4}, 1);
  tf::Image dst(size, size, src.format());
  const double mpix = static_cast<double>(src.pixels()) / 1e6;
  cv::Mat in(size, size, CV_8UC4, src.data(), src.pitch()), out;

  const tf::Kernel k2d = nonseparable_9x9();
  tf::Stage custom;
  custom.name = "custom 9x9";
  custom.convs.push_back(tf::make_convolution(k2d));
  if (custom.convs[0].separable) throw std::runtime_error("the 9x9 kernel came out separable");
  cv::Mat cv_k2d(9, 9, CV_32F, const_cast<float*>(k2d.taps.data()));

  struct Workload {
    std::string name;
    tf::Chain chain;
    std::function<void()> opencv;
  };
  const std::vector<Workload> workloads = {
      {"gaussian sigma 1.5, 9x9", tf::parse_chain({"gaussian:sigma=1.5,radius=4"}),
       [&] { cv::GaussianBlur(in, out, cv::Size(9, 9), 1.5, 1.5, cv::BORDER_REFLECT_101); }},
      {"gaussian sigma 5, 31x31", tf::parse_chain({"gaussian:sigma=5,radius=15"}),
       [&] { cv::GaussianBlur(in, out, cv::Size(31, 31), 5, 5, cv::BORDER_REFLECT_101); }},
      {"filter2D 9x9 (not separable)", tf::Chain{custom},
       [&] { cv::filter2D(in, out, -1, cv_k2d, cv::Point(-1, -1), 0, cv::BORDER_REFLECT_101); }},
  };

  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const tf::JobOptions opt;
  std::string body;
  for (const Workload& w : workloads) {
    if (w.name.find(only) == std::string::npos) continue;
    for (const int threads : {1, static_cast<int>(cores)}) {
      const auto devices = tf::select_devices(threads == 1 ? "cpu:1" : "cpu").devices;
      cv::setNumThreads(threads);
      auto ours = [&] { tf::run_filter(src.view(), dst.view(), w.chain, devices, opt); };
      ours();  // warm-up
      w.opencv();
      std::vector<double> t_ours, t_cv, c_ours, c_cv;
      for (int i = 0; i < repeats; ++i) {
        const auto [wall_ours, cpu_ours] = seconds(ours);
        const auto [wall_cv, cpu_cv] = seconds(w.opencv);
        t_ours.push_back(wall_ours), c_ours.push_back(cpu_ours);
        t_cv.push_back(wall_cv), c_cv.push_back(cpu_cv);
      }
      body += fmt::format(
          R"(  {{"filter": "{}", "threads": {}, "tilefilter_cpu": {}, "opencv": {}, "ratio_tilefilter_to_opencv": {:.2f}, "ratio_per_cpu_s": {:.2f}}},)"
          "\n",
          w.name, threads, stats(t_ours, c_ours, mpix), stats(t_cv, c_cv, mpix), median(t_cv) / median(t_ours),
          median(c_cv) / median(c_ours));
    }
  }
  body.resize(body.size() - 2);  // the last ",\n"
  fmt::print(R"({{"image": "{0}x{0} RGBA u8", "border": "reflect101", "repeats": {1}, "cores": {2}, "simd": "{3}",)"
             "\n"
             R"( "runs": [)"
             "\n{4}]}}\n",
             size, repeats, cores, tf::cpu::simd_target(), body);
}
