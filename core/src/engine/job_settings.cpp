#include "tilefilter/engine/job_settings.hpp"

#include <fmt/format.h>

#include "tilefilter/util/error.hpp"

namespace tf {

Border border_named(const std::string& name, double value) {
  const auto mode = parse_border_mode(name);
  if (!mode)
    throw Error(ErrorKind::InvalidArgument, fmt::format("--border '{}': use one of {}", name, border_mode_names()));
  return {*mode, static_cast<float>(value)};
}

JobOptions make_job_options(const JobSettings& s, const Border& default_border) {
  JobOptions job;
  job.border = s.border ? border_named(*s.border, s.border_value) : default_border;
  if (s.tile.width < 0 || s.tile.height < 0) throw Error(ErrorKind::InvalidArgument, "--tile: sizes must be positive");
  job.schedule.tile = s.tile;
  if (s.streams && (*s.streams < 1 || *s.streams > kMaxStreams))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--streams {}: use a number between 1 and {}", *s.streams, kMaxStreams));
  job.schedule.streams_per_device = s.streams.value_or(0);
  job.exact = s.exact;
  return job;
}

}  // namespace tf
