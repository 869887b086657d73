// A job's options as a front end takes them (the CLI's flags, the C API's tf_options, Python's
// keywords through it), checked in one place: each range and its message are defined here once, and
// every front end asks make_job_options rather than checking on its own.
#pragma once
#include <optional>
#include <string>

#include "tilefilter/engine/scheduler.hpp"

namespace tf {

// CUDA streams per GPU a job may ask for.
inline constexpr int kMaxStreams = 64;

struct JobSettings {
  std::optional<std::string> border;  // a border mode's name; none = the default border given
  double border_value = 0;            // for constant, in pixel units (with `border`)
  TileSize tile;                      // output pixels; 0 = chosen from device memory
  std::optional<int> streams;         // none = the backend's choice; else 1..kMaxStreams
  bool exact = false;                 // direct convolution only
};

// The border mode called `name` with `value`; throws tf::Error (InvalidArgument) naming --border and
// the modes there are.
Border border_named(const std::string& name, double value);
// The settings as a job's options, `default_border` where they name none. Throws tf::Error
// (InvalidArgument) naming the flag (--border, --tile, --streams) and its range.
JobOptions make_job_options(const JobSettings& settings, const Border& default_border = {});

}  // namespace tf
