// libFuzzer: any bytes through the decoders (every format this build reads), then a small filter
// and an encode, with limits small enough that a hostile header cannot make us allocate much.
#include <cstdint>

#include "tilefilter/codec.hpp"
#include "tilefilter/cpu.hpp"
#include "tilefilter/error.hpp"
#include "tilefilter/scheduler.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto devices = tf::select_devices("cpu:1").devices;
  static const tf::Chain chain = tf::parse_chain({"box:radius=1"});
  tf::Limits limits;
  limits.max_pixels = 1 << 20;
  limits.max_file_bytes = 1 << 22;
  try {
    const tf::Image img = tf::decode_memory({data, size}, "fuzz-input", limits);
    tf::JobOptions opt;
    opt.schedule.tile_width = opt.schedule.tile_height = 64;
    const tf::Image out = tf::filter_image(img, chain, devices, opt);
    (void)out;
  } catch (const tf::Error&) {
    // Refusing bad input with an error is the expected outcome; anything else is a bug.
  }
  return 0;
}
