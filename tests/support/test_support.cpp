#include "test_support.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include <fmt/format.h>

namespace tf::test {

Image random_image(int width, int height, Format format, std::uint32_t seed) {
  Image img(width, height, format);
  std::mt19937 rng(seed);
  const auto& v = img.view();
  // Mix smooth content and noise so both edges and flat-ish regions appear; never constant.
  Image base = make_test_image(width, height, format, seed, Pattern::Photo);
  std::uniform_real_distribution<float> noise(-1.0f, 1.0f);
  for (int y = 0; y < height; ++y) {
    const std::size_t n = static_cast<std::size_t>(width) * format.channels;
    for (std::size_t i = 0; i < n; ++i) {
      const bool wild = (rng() & 7) == 0;
      switch (format.type) {
        case PixelType::U8: {
          const int b = base.view().row_as<std::uint8_t>(y)[i];
          v.row_as<std::uint8_t>(y)[i] =
              static_cast<std::uint8_t>(wild ? rng() & 255 : std::clamp(b + int(noise(rng) * 20), 0, 255));
          break;
        }
        case PixelType::U16: {
          const int b = base.view().row_as<std::uint16_t>(y)[i];
          v.row_as<std::uint16_t>(y)[i] =
              static_cast<std::uint16_t>(wild ? rng() & 65535 : std::clamp(b + int(noise(rng) * 5000), 0, 65535));
          break;
        }
        case PixelType::F32: {
          const float b = base.view().row_as<float>(y)[i];
          v.row_as<float>(y)[i] = wild ? noise(rng) + 0.5f : b + 0.1f * noise(rng);
          break;
        }
      }
    }
  }
  return img;
}

std::uint32_t test_seed(std::uint32_t fallback) {
  if (const char* s = std::getenv("TF_TEST_SEED")) return static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
  return fallback;
}

TempDir::TempDir() {
  static int counter = 0;
  path = std::filesystem::temp_directory_path() / fmt::format("tf-test-{}-{}", ::getpid(), counter++);
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
}
TempDir::~TempDir() {
  std::error_code ec;
  if (!std::getenv("TF_TEST_KEEP")) std::filesystem::remove_all(path, ec);  // keep to debug a failure
}

int run_cli(const std::string& args, std::string* out) {
  const std::string cmd = fmt::format("'{}' {} 2>&1", TF_CLI_PATH, args);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf{};
  std::string text;
  while (std::fgets(buf.data(), buf.size(), p)) text += buf.data();
  const int status = ::pclose(p);
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Difference compare(const ImageView& a, const ImageView& b) {
  Difference d;
  const int C = a.format.channels;
  for (int y = 0; y < a.height; ++y)
    for (int x = 0; x < a.width; ++x)
      for (int c = 0; c < C; ++c) {
        const std::size_t i = static_cast<std::size_t>(x) * C + c;
        double va = 0, vb = 0;
        switch (a.format.type) {
          case PixelType::U8:
            va = a.row_as<std::uint8_t>(y)[i];
            vb = b.row_as<std::uint8_t>(y)[i];
            break;
          case PixelType::U16:
            va = a.row_as<std::uint16_t>(y)[i];
            vb = b.row_as<std::uint16_t>(y)[i];
            break;
          case PixelType::F32:
            va = a.row_as<float>(y)[i];
            vb = b.row_as<float>(y)[i];
            break;
        }
        const double diff = std::fabs(va - vb);
        const double rel = diff / std::max(1.0, std::max(std::fabs(va), std::fabs(vb)));
        if (diff > d.max_abs || std::isnan(diff)) {
          d.max_abs = std::isnan(diff) ? INFINITY : diff;
          d.x = x;
          d.y = y;
          d.c = c;
        }
        d.max_rel = std::max(d.max_rel, rel);
      }
  return d;
}

std::string describe(const Format& f) { return to_string(f); }

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace tf::test
