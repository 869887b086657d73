// Options shared by the subcommands that run filter jobs (apply, batch, bench).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/io/codec.hpp"

namespace tf::cli {

struct JobFlags {
  std::vector<std::string> filters;
  std::string border = "reflect101";
  double border_value = 0;
  std::string devices = "all";
  std::string tile;            // "N" or "WxH"
  std::optional<int> streams;  // none: the backend's choice
  std::size_t device_memory = 0;
  long long pixel_limit = Limits{}.max_pixels;
  long long stream_pixel_limit = Limits{}.max_stream_pixels;
  double fault_rate = 0;  // test-only
  bool exact = false;     // --exact: direct convolution only (no FFT path)
  std::string preset;     // --preset FILE: a chain saved by the GUI (apply and batch)
  bool verbose = false;   // --verbose: the start-up steps (process start to each device ready) on stderr
  const CLI::Option* border_flag = nullptr;
  const CLI::Option* border_value_flag = nullptr;
};

void add_job_flags(CLI::App& cmd, JobFlags& flags);
// --preset FILE, after add_job_flags: --filter is then optional, and a preset alone is a chain.
void add_preset_flag(CLI::App& cmd, JobFlags& flags);
// The flags with the preset's filters ahead of any --filter, and its border unless --border is
// given. Throws tf::Error naming the preset file and what is wrong with it.
JobFlags with_preset(const JobFlags& flags);
// The installed "presets" or "samples" folder: <prefix>/share/tilefilter/WHAT beside the
// executable's <prefix>/bin, else the source tree's resources/WHAT; empty when neither exists.
std::string bundled_folder(const std::string& what);

// How outputs are written: the options a user of vips or magick expects.
struct WriteFlags {
  int quality = 0;          // 0 = the input's
  std::string subsampling;  // JPEG: 444, 422 or 420; empty = the input's
  std::string compression;  // TIFF method[:level] or a PNG/deflate level 0-9
  bool bigtiff = false;
  std::string tiff_tile;  // WxH; empty = strips
  bool tiff_pyramid = false;
  bool strip = false;
};
void add_write_flags(CLI::App& cmd, WriteFlags& flags);
// --quality and --subsampling (JPEG), for add_write_flags and `batch`.
void add_jpeg_flags(CLI::App& cmd, int& quality, std::string& subsampling);
// Throws tf::Error naming the flag.
WriteOptions write_options(const WriteFlags& flags);
// A size such as 512M, 1.5G, 2GiB or 4096 (bytes, or pixels for --split-pixels): K, M, G, T are
// powers of 1024, a fraction is allowed; the transform leaves the whole count in the text.
CLI::Validator size_value();
// "WxH" or "N" into positive sizes; throws tf::Error naming `flag`.
TileSize parse_size(const std::string& text, const std::string& flag);
// Parses the border and tile flags into options; throws tf::Error with the offending flag named.
JobOptions job_options(const JobFlags& flags);

// Prints the process's start-up steps so far (startup_steps(): driver, contexts, codec lanes, first
// result) to stderr, in seconds since the process started.
void print_startup_steps();

// A one-line progress bar on stderr when it is a terminal; silent otherwise.
class Progress {
 public:
  explicit Progress(std::string label);
  ~Progress();
  // `detail` follows the bar; with show_eta, so does the time left from the rate so far.
  void update(double fraction, const std::string& detail = {});
  void show_eta() { eta_ = true; }
  void finish();

 private:
  std::string label_;
  bool tty_;
  bool shown_ = false;
  double last_ = -1;
  bool eta_ = false;
  double start_s_ = 0;
};

}  // namespace tf::cli
