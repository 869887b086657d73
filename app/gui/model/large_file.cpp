#include "large_file.hpp"

#include <chrono>
#include <cstdio>
#include <mutex>

#include "platform/device_hub.hpp"
#include "preview_plan.hpp"
#include "tilefilter/io/overview.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::gui {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void check(const std::atomic<bool>* cancel) {
  if (cancel && *cancel) throw Error(ErrorKind::Cancelled, "cancelled");
}

}  // namespace

bool region_reads_quickly(const ImageInfo& file, const Rect& region) {
  if (file.access != RowAccess::Sequential) return true;
  const auto rows = static_cast<std::size_t>(region.bottom());
  return rows * file.width * file.format.pixel_bytes() <= large_image_bytes();
}

RegionPreview preview_file_region(const std::string& path, const Rect& visible, const ChainSettings& chain,
                                  const std::string& devices, const std::atomic<bool>* cancel) {
  RegionPreview out;
  const bool filtered = !chain.filters.empty() && chain.border.mode != BorderMode::Wrap;
  const Chain parsed = filtered ? parse_chain(to_specs(chain.filters)) : Chain{};
  auto reader = open_image(path);
  const ImageInfo& info = reader->info();
  // Grown by the halo so that the filter sees, around `visible`, what the whole file holds there.
  const Rect read = filtered ? grow_clipped(visible, chain_halo(parsed), info.width, info.height) : visible;
  const auto t0 = std::chrono::steady_clock::now();
  const Image input = read_region(*reader, read);
  out.read_ms = ms_since(t0);
  check(cancel);
  const Rect keep{visible.x - read.x, visible.y - read.y, visible.width, visible.height};
  out.before = crop(input, keep);
  if (!filtered) return out;
  std::unique_lock lock(DeviceHub::instance().job_mutex());  // one job on the devices at a time
  check(cancel);
  const DeviceSelection selection = DeviceHub::instance().select(devices);
  JobOptions options;
  options.border = chain.border;
  options.cancel = cancel;
  auto report = std::make_shared<JobReport>();
  const auto t1 = std::chrono::steady_clock::now();
  const Image result = filter_image(input, parsed, selection.devices, options, report.get());
  out.filter_ms = ms_since(t1);
  out.after = crop(result, keep);
  out.report = std::move(report);
  return out;
}

TemporaryFile::TemporaryFile(std::string path, std::shared_ptr<const void> folder)
    : path_(std::move(path)), folder_(std::move(folder)) {}

TemporaryFile::~TemporaryFile() { std::remove(path_.c_str()); }

LargeApplied apply_to_file(const LargeSource& source, const std::string& output, std::shared_ptr<const void> folder,
                           const ChainSettings& chain, const std::string& devices, const WriteOptions& write,
                           const std::function<void(double)>& progress, const std::atomic<bool>* cancel) {
  const Chain parsed = parse_chain(to_specs(chain.filters));
  // The owner first: whatever fails below, a file left under `output` is removed with it.
  auto owner = std::make_shared<TemporaryFile>(output, std::move(folder));
  StreamOptions options;
  options.write = write;
  options.write.compression = "deflate";  // fast to write, and tiles read back where they lie for the view
  options.write.level = 1;
  options.write.tiff_tile = {256, 256};
  // With reduced-resolution levels the overview read back below (and again by Undo, Redo or a
  // reopen) is a level's read instead of a decode of every tile; writing them costs less.
  options.write.tiff_pyramid = true;
  // Filtering takes most of the time; reading the result's overview back the rest.
  if (progress) options.progress = [progress](double f) { progress(0.8 * f); };
  LargeApplied out;
  {
    std::unique_lock lock(DeviceHub::instance().job_mutex());
    const DeviceSelection selection = DeviceHub::instance().select(devices);
    JobOptions job;
    job.border = chain.border;
    job.cancel = cancel;
    out.report = filter_file(source.path, output, parsed, selection.devices, job, options);
  }
  out.state = load_large_state(
      output,
      [progress](double f) {
        if (progress) progress(0.8 + 0.2 * f);
      },
      cancel);
  auto large = std::make_shared<LargeSource>(*out.state.large);
  large->owner = std::move(owner);
  out.state.large = std::move(large);
  return out;
}

}  // namespace tf::gui
