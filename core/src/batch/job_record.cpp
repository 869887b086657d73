// The job record in OUT_DIR: --resume only skips outputs that the same job would have written.
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "batch_internal.hpp"
#include "tilefilter/image/border.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::batch {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

json record_of(const BatchOptions& opt) {
  return {{"filters", opt.filters},
          {"border", to_string(opt.job.border.mode)},
          {"border_value", opt.job.border.value},
          {"format", opt.format},
          {"quality", opt.quality}};
}

std::string path_of(const BatchOptions& opt) { return (fs::path(opt.output_dir) / kJobRecordName).string(); }

std::string describe(const json& j) {
  const auto filters = j.value("filters", std::vector<std::string>{});
  return fmt::format("filters [{}], border {}, format {}, quality {}", fmt::join(filters, " "),
                     j.value("border", std::string("?")), j.value("format", std::string("?")), j.value("quality", 0));
}

}  // namespace

std::string check_job_record(const BatchOptions& opt) {
  const std::string path = path_of(opt);
  std::ifstream in(path);
  if (!in)
    return fmt::format("{} holds no record of an earlier job: outputs found there are taken as done", opt.output_dir);
  const json earlier = json::parse(in, nullptr, /*allow_exceptions=*/false);
  const json now = record_of(opt);
  if (earlier.is_discarded() || !earlier.is_object())
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("{}: unreadable job record; run without --resume to redo every file", path));
  for (const auto& [key, value] : now.items())
    if (!earlier.contains(key) || earlier.at(key) != value)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("{}: --resume would mix two jobs: its outputs were made with {}, this run asks for {}. "
                              "Run without --resume to redo every file, or choose another output folder",
                              opt.output_dir, describe(earlier), describe(now)));
  return {};
}

void write_job_record(const BatchOptions& opt) {
  const std::string text = record_of(opt).dump(2) + '\n';
  write_file_atomically(path_of(opt), {reinterpret_cast<const unsigned char*>(text.data()), text.size()});
}

}  // namespace tf::batch
