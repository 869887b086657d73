// Custom kernels as files. A kernel edited as a grid (the GUI) or held in a preset becomes a kernel
// text file, so that every front end hands the scheduler the same spec ("custom:file=...") and
// core parses kernels in one place. Files are named by a hash of their text: the same taps always
// map to the same file, so a batch's job record stays the same from run to run.
#pragma once
#include <string>
#include <vector>

#include "tilefilter/filters/filter.hpp"

namespace tf {

struct KernelGrid {
  int width = 3, height = 3;
  std::vector<double> taps = std::vector<double>(9, 0.0);  // height rows of width taps

  static KernelGrid identity(int width, int height);
  static KernelGrid from_kernel(const Kernel& kernel);
  static KernelGrid from_rows(const std::vector<std::vector<double>>& rows);  // rows of equal length
  double at(int x, int y) const { return taps[static_cast<std::size_t>(y) * width + x]; }
  std::vector<std::vector<double>> rows() const;
  void resize(int new_width, int new_height);  // keeps the centred part of the old taps
  double sum() const;
  std::string to_text() const;  // the kernel file format core reads (rows of numbers)
  bool operator==(const KernelGrid&) const = default;
};

// Folder for generated kernel files: set_kernel_store_dir's, else $XDG_DATA_HOME/tilefilter/kernels
// (~/.local/share/...), else the temporary folder's tilefilter/kernels.
void set_kernel_store_dir(const std::string& dir);
std::string kernel_store_dir();
// Writes the grid (if not there yet) and returns the file's path. Throws tf::Error (Io) when it cannot.
std::string kernel_file_for(const KernelGrid& grid);

}  // namespace tf
