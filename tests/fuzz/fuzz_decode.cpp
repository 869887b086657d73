// libFuzzer: any bytes through the decoders (every format this build reads), then a small filter
// and an encode, with limits small enough that a hostile header cannot make us allocate much.
// Bytes go through both doors: decode_memory (stb, TurboJPEG, OpenCV in memory) and, written to a
// file, open_image's streaming readers (libtiff, libpng, libjpeg) read in bands of 7 rows, and so
// are the reduced levels they offer (TIFF pyramid pages and SubIFDs, JPEG DCT scaling).
#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <string>

#include "tilefilter/engine/cpu.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/util/error.hpp"

namespace {

std::string scratch_path() {
  const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/tf-fuzz-decode-" + std::to_string(::getpid());
}

void read_all(tf::ImageReader& reader, const tf::Limits& limits) {
  const tf::ImageInfo& info = reader.info();
  if (static_cast<long long>(info.width) * info.height > limits.max_pixels) return;
  tf::Image band(info.width, 7, info.format);
  for (int y = 0; y < info.height; y += 7) {
    tf::ImageView rows = band.view();
    rows.height = std::min(7, info.height - y);
    reader.read_rows(y, rows);
  }
}

void read_in_bands(const std::string& path, const tf::Limits& limits) {
  auto reader = tf::open_image(path, limits);
  for (int i = 0; i < static_cast<int>(reader->info().levels.size()); ++i) {
    try {
      read_all(*reader->open_level(i), limits);
    } catch (const tf::Error&) {
    }
  }
  read_all(*reader, limits);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto devices = tf::select_devices("cpu:1").devices;
  static const tf::Chain chain = tf::parse_chain({"box:radius=1"});
  static const std::string path = scratch_path();
  tf::Limits limits;
  limits.max_pixels = 1 << 20;
  limits.max_stream_pixels = 1 << 20;
  limits.max_file_bytes = 1 << 22;
  try {
    const tf::Image img = tf::decode_memory({data, size}, "fuzz-input", limits);
    tf::JobOptions opt;
    opt.schedule.tile = {64, 64};
    const tf::Image out = tf::filter_image(img, chain, devices, opt);
    (void)out;
  } catch (const tf::Error&) {
    // Refusing bad input with an error is the expected outcome; anything else is a bug.
  }
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    const bool ok = std::fwrite(data, 1, size, f) == size;
    std::fclose(f);
    try {
      if (ok) read_in_bands(path, limits);
    } catch (const tf::Error&) {
    }
  }
  return 0;
}
