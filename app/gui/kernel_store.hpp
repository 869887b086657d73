// A custom kernel edited in the grid becomes a kernel text file, so that the preview, Apply, batch
// and presets all hand core the same spec ("custom:file=...") and core parses it in one place.
// Files are named by a hash of their text: the same grid always maps to the same file.
#pragma once
#include <QString>
#include <vector>

#include "tilefilter/filter.hpp"

namespace tf::gui {

struct KernelGrid {
  int width = 3, height = 3;
  std::vector<double> taps = std::vector<double>(9, 0.0);  // height rows of width taps

  static KernelGrid identity(int width, int height);
  static KernelGrid from_kernel(const Kernel& kernel);
  double at(int x, int y) const { return taps[static_cast<std::size_t>(y) * width + x]; }
  void resize(int new_width, int new_height);  // keeps the centred part of the old taps
  double sum() const;
  std::string to_text() const;  // the kernel file format core reads (rows of numbers)
  bool operator==(const KernelGrid&) const = default;
};

// Directory for generated kernel files (default: the application's data folder, else the temp folder).
void set_kernel_store_dir(const QString& dir);
QString kernel_store_dir();
// Writes the grid (if not there yet) and returns the file's path. Throws tf::Error when it cannot.
QString kernel_file_for(const KernelGrid& grid);

}  // namespace tf::gui
