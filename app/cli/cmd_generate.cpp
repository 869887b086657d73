// tilefilter generate OUT: the project's own test and sample images.
#include <fmt/format.h>

#include "commands.hpp"
#include "tilefilter/codec.hpp"
#include "tilefilter/error.hpp"
#include "tilefilter/testimage.hpp"

namespace tf::cli {

void add_generate(CLI::App& app) {
  struct Args {
    std::string output, size = "1024x768", type = "u8", pattern = "photo";
    int channels = 3, quality = 92;
    unsigned seed = 1;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("generate", "write a generated test image (photo-like content, chart or noise)");
  cmd->add_option("output", a->output, "output image")->required();
  cmd->add_option("--size", a->size, "WxH")->capture_default_str();
  cmd->add_option("--type", a->type, "u8, u16 or f32")->check(CLI::IsMember({"u8", "u16", "f32"}))->capture_default_str();
  cmd->add_option("--channels", a->channels, "1, 3 or 4")->check(CLI::IsMember({1, 3, 4}))->capture_default_str();
  cmd->add_option("--pattern", a->pattern, "photo, chart or noise")->check(CLI::IsMember({"photo", "chart", "noise"}))->capture_default_str();
  cmd->add_option("--seed", a->seed, "random seed")->capture_default_str();
  cmd->add_option("--quality", a->quality, "JPEG quality")->capture_default_str();
  cmd->callback([a] {
    int w = 0, h = 0;
    if (std::sscanf(a->size.c_str(), "%dx%d", &w, &h) != 2 || w < 1 || h < 1)
      throw Error(ErrorKind::InvalidArgument, fmt::format("--size '{}': expected WxH", a->size));
    const PixelType t = a->type == "u8" ? PixelType::U8 : a->type == "u16" ? PixelType::U16 : PixelType::F32;
    const Pattern p = a->pattern == "photo" ? Pattern::Photo : a->pattern == "chart" ? Pattern::Chart : Pattern::Noise;
    const Image img = make_test_image(w, h, Format{t, a->channels}, a->seed, p);
    encode_file(a->output, img.view(), EncodeOptions{a->quality});
  });
}

}  // namespace tf::cli
