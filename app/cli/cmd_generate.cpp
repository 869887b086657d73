// tilefilter generate OUT: the project's own test and sample images, of any size: rows are made
// and written band by band (on every core), so a 60000 x 60000 TIFF needs a few bands of memory.
#include <algorithm>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "commands.hpp"
#include "options.hpp"
#include "tilefilter/image/testimage.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/util/error.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf::cli {

namespace {

// Fills `band` (image rows first_row...) on every core.
void fill_parallel(const ImageView& band, int first_row, int image_height, unsigned seed, Pattern pattern) {
  const int workers = std::max(1, std::min(default_threads(), band.height));
  std::vector<std::thread> threads;
  for (int t = 0; t < workers; ++t) {
    const int r0 = band.height * t / workers, r1 = band.height * (t + 1) / workers;
    threads.emplace_back([=] {
      ImageView part = band;
      part.data = band.row(r0);
      part.height = r1 - r0;
      if (part.height > 0) fill_test_rows(part, first_row + r0, image_height, seed, pattern);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace

void add_generate(CLI::App& app) {
  struct Args {
    std::string output, size = "1024x768", type = "u8", pattern = "photo";
    int channels = 3;
    unsigned seed = 1;
    WriteFlags write;
  };
  auto a = std::make_shared<Args>();
  a->write.subsampling = "420";  // as cameras and phones write their photos
  auto* cmd = app.add_subcommand("generate", "write a generated test image (photo-like content, chart or noise)");
  cmd->add_option("output", a->output, "output image")->required();
  cmd->add_option("--size", a->size, "WxH")->capture_default_str();
  cmd->add_option("--type", a->type, "u8, u16 or f32")
      ->check(CLI::IsMember({"u8", "u16", "f32"}))
      ->capture_default_str();
  cmd->add_option("--channels", a->channels, "1, 3 or 4")->check(CLI::IsMember({1, 3, 4}))->capture_default_str();
  cmd->add_option("--pattern", a->pattern, "photo, chart or noise")
      ->check(CLI::IsMember({"photo", "chart", "noise"}))
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "random seed")->capture_default_str();
  add_write_flags(*cmd, a->write);
  cmd->callback([a] {
    const TileSize size = parse_size(a->size, "--size");
    const PixelType t = a->type == "u8" ? PixelType::U8 : a->type == "u16" ? PixelType::U16 : PixelType::F32;
    const Pattern p = a->pattern == "photo" ? Pattern::Photo : a->pattern == "chart" ? Pattern::Chart : Pattern::Noise;
    const Format format{t, a->channels};
    auto writer = create_image(a->output, size.width, size.height, format, {}, write_options(a->write));
    // Bands of about 64 MiB: the whole image for small sizes, a bounded slice of a huge one.
    const std::size_t row_bytes = static_cast<std::size_t>(size.width) * format.pixel_bytes();
    const int rows = static_cast<int>(std::clamp<std::size_t>((64ULL << 20) / row_bytes, 16, size.height));
    Image band(size.width, rows, format);
    Progress progress("generating");
    progress.show_eta();
    for (int y = 0; y < size.height; y += rows) {
      ImageView part = band.view();
      part.height = std::min(rows, size.height - y);
      fill_parallel(part, y, size.height, a->seed, p);
      writer->write_rows(part);
      progress.update(static_cast<double>(y + part.height) / size.height);
    }
    writer->finish();
    progress.finish();
  });
}

}  // namespace tf::cli
