// CPU backend throughput next to OpenCV's GaussianBlur, measured in the same process on the same
// image: tf_cpu_bench [SIZE] [REPEATS]. Single thread (cpu:1 vs cv::setNumThreads(1)) and all
// threads. Prints one JSON object. Includes no codecs; the image is in host memory.
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "tilefilter/scheduler.hpp"
#include "tilefilter/testimage.hpp"

namespace {

template <class F> std::vector<double> time_runs(int repeats, F&& f) {
  f();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t;
}

std::string stats(const std::vector<double>& t, double mpix) {
  const double med = t[t.size() / 2];
  return fmt::format(R"({{"median_s": {:.4f}, "min_s": {:.4f}, "max_s": {:.4f}, "mpix_per_s": {:.1f}}})", med,
                     t.front(), t.back(), mpix / med);
}

}  // namespace

int main(int argc, char** argv) {
  const int size = argc > 1 ? std::atoi(argv[1]) : 8192;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  const tf::Image src = tf::make_test_image(size, size, tf::Format{tf::PixelType::U8, 4}, 1);
  tf::Image dst(size, size, src.format());
  const double mpix = src.pixels() / 1e6;
  // 9 taps: sigma 1.5, radius 4 — OpenCV's GaussianBlur(9x9, 1.5).
  const tf::Chain chain = tf::parse_chain({"gaussian:sigma=1.5,radius=4"});
  tf::JobOptions opt;
  auto ours = [&](const std::string& devices) {
    auto sel = tf::select_devices(devices).devices;
    return time_runs(repeats, [&] { tf::run_filter(src.view(), dst.view(), chain, sel, opt); });
  };
  cv::Mat in(size, size, CV_8UC4, src.data(), src.pitch()), out;
  auto theirs = [&](int threads) {
    cv::setNumThreads(threads);
    return time_runs(repeats, [&] { cv::GaussianBlur(in, out, cv::Size(9, 9), 1.5, 1.5, cv::BORDER_REFLECT_101); });
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  fmt::print(R"({{"image": "{0}x{0} RGBA u8", "filter": "gaussian 9x9 sigma 1.5", "repeats": {1}, "cores": {2},)"
             "\n"
             R"( "tilefilter_cpu_1_thread": {3},)"
             "\n"
             R"( "opencv_1_thread": {4},)"
             "\n"
             R"( "tilefilter_cpu_all_threads": {5},)"
             "\n"
             R"( "opencv_all_threads": {6}}})"
             "\n",
             size, repeats, cores, stats(ours("cpu:1"), mpix), stats(theirs(1), mpix), stats(ours("cpu"), mpix),
             stats(theirs(static_cast<int>(cores)), mpix));
}
