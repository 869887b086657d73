#include "tilefilter/filters/kernel_store.hpp"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <system_error>

#include <fmt/format.h>

#include "tilefilter/util/atomic_write.hpp"
#include "tilefilter/util/error.hpp"

namespace tf {

namespace fs = std::filesystem;

KernelGrid KernelGrid::identity(int width, int height) {
  KernelGrid g;
  g.width = width;
  g.height = height;
  g.taps.assign(static_cast<std::size_t>(width) * height, 0.0);
  g.taps[static_cast<std::size_t>(height / 2) * width + width / 2] = 1.0;
  return g;
}

KernelGrid KernelGrid::from_kernel(const Kernel& kernel) {
  KernelGrid g;
  g.width = kernel.width;
  g.height = kernel.height;
  g.taps.assign(kernel.taps.begin(), kernel.taps.end());
  return g;
}

KernelGrid KernelGrid::from_rows(const std::vector<std::vector<double>>& rows) {
  KernelGrid g;
  g.height = static_cast<int>(rows.size());
  g.width = rows.empty() ? 0 : static_cast<int>(rows[0].size());
  g.taps.clear();
  for (const auto& r : rows) g.taps.insert(g.taps.end(), r.begin(), r.end());
  return g;
}

std::vector<std::vector<double>> KernelGrid::rows() const {
  std::vector<std::vector<double>> out(static_cast<std::size_t>(height));
  for (int y = 0; y < height; ++y)
    out[y].assign(taps.begin() + static_cast<std::ptrdiff_t>(y) * width,
                  taps.begin() + static_cast<std::ptrdiff_t>(y + 1) * width);
  return out;
}

void KernelGrid::resize(int new_width, int new_height) {
  std::vector<double> out(static_cast<std::size_t>(new_width) * new_height, 0.0);
  const int dx = (new_width - width) / 2, dy = (new_height - height) / 2;
  for (int y = 0; y < new_height; ++y)
    for (int x = 0; x < new_width; ++x) {
      const int ox = x - dx, oy = y - dy;
      if (ox >= 0 && ox < width && oy >= 0 && oy < height)
        out[static_cast<std::size_t>(y) * new_width + x] = at(ox, oy);
    }
  width = new_width;
  height = new_height;
  taps = std::move(out);
}

double KernelGrid::sum() const {
  double s = 0;
  for (double t : taps) s += t;
  return s;
}

std::string KernelGrid::to_text() const {
  std::string text = fmt::format("# {}x{} kernel written by tilefilter\n", width, height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) text += fmt::format("{}{:.9g}", x ? " " : "", at(x, y));
    text += '\n';
  }
  return text;
}

namespace {

std::string& store_dir() {
  static std::string dir;
  return dir;
}

// FNV-1a: a stable name for the same text on every run and machine (not a security hash).
std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

void set_kernel_store_dir(const std::string& dir) { store_dir() = dir; }

std::string kernel_store_dir() {
  if (!store_dir().empty()) return store_dir();
  std::string base;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) base = xdg;
  else if (const char* home = std::getenv("HOME"); home && *home) base = std::string(home) + "/.local/share";
  // Specs separate parameters with commas, so a path holding one cannot be passed to core.
  std::error_code ec;
  if (base.empty() || base.find(',') != std::string::npos) base = fs::temp_directory_path(ec).string();
  return base + "/tilefilter/kernels";
}

std::string kernel_file_for(const KernelGrid& grid) {
  const std::string text = grid.to_text();
  const std::string dir = kernel_store_dir();
  const std::string path = fmt::format("{}/kernel-{:016x}.txt", dir, fnv1a(text));
  std::error_code ec;
  if (fs::exists(path, ec)) return path;
  fs::create_directories(dir, ec);
  if (ec)
    throw Error(ErrorKind::Io, fmt::format("{}: cannot create the folder for kernel files ({})", dir, ec.message()));
  write_file_atomically(
      path, std::span<const unsigned char>(reinterpret_cast<const unsigned char*>(text.data()), text.size()));
  return path;
}

}  // namespace tf
