// Helpers shared by the test suites.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tilefilter/image/image.hpp"
#include "tilefilter/image/testimage.hpp"

namespace tf::test {

// A random image (never zeros or constants) whose seed is printed when the test fails.
// Floats get values in [-0.5, 1.5] so saturation and negative results are exercised.
Image random_image(int width, int height, Format format, std::uint32_t seed);

// The seed for this test: TF_TEST_SEED when set, else a fixed one; printed via SCOPED_TRACE.
std::uint32_t test_seed(std::uint32_t fallback);

// A fresh temporary folder, removed when the object goes away.
struct TempDir {
  TempDir();
  ~TempDir();
  std::filesystem::path path;
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// A file's bytes (empty when it cannot be read), and bytes written to a file (its folder made first).
std::vector<unsigned char> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes);

// Runs the tilefilter CLI with arguments (a shell string); returns the exit code, output in `out`.
int run_cli(const std::string& args, std::string* out = nullptr);

// Max |a-b| over all samples (as double), and the position of the worst one for messages.
struct Difference {
  double max_abs = 0, max_rel = 0;
  int x = -1, y = -1, c = -1;
};
Difference compare(const ImageView& a, const ImageView& b);

std::string describe(const Format& f);

}  // namespace tf::test
