// Options shared by the subcommands that run filter jobs (apply, batch, bench).
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tilefilter/codec.hpp"
#include "tilefilter/scheduler.hpp"

namespace tf::cli {

struct JobFlags {
  std::vector<std::string> filters;
  std::string border = "reflect101";
  double border_value = 0;
  std::string devices = "all";
  std::string tile;  // "N" or "WxH"
  int streams = 0;
  std::size_t device_memory = 0;
  long long pixel_limit = Limits{}.max_pixels;
  double fault_rate = 0;  // test-only
};

void add_job_flags(CLI::App& cmd, JobFlags& flags);
// Parses the border and tile flags into options; throws tf::Error with the offending flag named.
JobOptions job_options(const JobFlags& flags);

// A one-line progress bar on stderr when it is a terminal; silent otherwise.
class Progress {
 public:
  explicit Progress(std::string label);
  ~Progress();
  void update(double fraction, const std::string& detail = {});
  void finish();

 private:
  std::string label_;
  bool tty_;
  bool shown_ = false;
  double last_ = -1;
};

}  // namespace tf::cli
