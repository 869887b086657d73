// Filtering one file into another band by band: decode -> devices -> encode, the three stages
// overlapped on their own threads, so the image never has to be in memory at once. Peak memory is
// bounded by StreamOptions::memory_budget, not by the image (formats that cannot stream, wrap
// borders and images smaller than their halo are filtered in one band: the whole image).
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/io/io.hpp"

namespace tf {

struct StreamOptions {
  Limits limits;
  WriteOptions write;             // write.strip drops the metadata
  std::size_t memory_budget = 0;  // bytes of host memory for pixels in flight; 0 = automatic
  int band_rows = 0;              // 0 = from the budget (tests force small bands)
  bool autorotate = false;        // rotate pixels by the EXIF orientation, write orientation 1
  // Where the bands' and their windows' pixels live (a batch recycles them from file to file); null:
  // default_allocator().
  const PixelAllocator* allocator = nullptr;
  std::function<void(double fraction)> progress;  // from the filtering thread
};

struct StreamReport {
  int width = 0, height = 0;
  Format format;
  std::string decoder, encoder;
  std::string note;  // the reader's note and why an image went in one band
  int bands = 0, band_rows = 0;
  std::size_t planned_bytes = 0;                                // pixel buffers the plan holds at most
  double decode_s = 0, filter_s = 0, encode_s = 0, wall_s = 0;  // per stage, busy time
  JobReport job;                                                // tiles per device and failures, summed over bands
};

// Filters `input` into `output` (written as temp + rename: nothing under the final name unless it
// all succeeded). Throws tf::Error naming the file and the reason.
StreamReport filter_file(const std::string& input, const std::string& output, const Chain& chain,
                         const std::vector<DevicePtr>& devices, const JobOptions& job, const StreamOptions& options);

// Why filter_file takes `info`'s image into `output` in one band (the whole image in memory): --autorotate
// turning it, a reader or writer that works on whole images, a wrap border, a chain that cannot run in one
// pass; "" when it streams band by band.
std::string whole_image_reason(const ImageInfo& info, const std::string& output, const Chain& chain,
                               const std::vector<DevicePtr>& devices, const JobOptions& job, bool autorotate);

// The band height for an image `width` x `height` of `format` when `budget` bytes are left for
// pixel buffers and codecs (filter_file first takes the CPU workers' tile working sets off
// StreamOptions::memory_budget), with the chain's vertical halo. The codecs' share grows with the
// cores where a reader or writer runs a worker per core (TIFF, the PNG writer), else 8 MiB.
int band_rows_for_budget(int width, int height, const Format& format, const Halo& halo, std::size_t budget,
                         bool codecs_on_every_core = true);

// The host memory filter_file plans for when StreamOptions::memory_budget is 0, before the CPU
// workers' tile working sets (which depend on the chain and the devices) are added to it: 48 MiB of
// pixels in flight plus the codecs' reserve for this machine's cores (the most: a file whose reader
// and writer are one thread each, JPEG to JPEG, plans 8 MiB for them). What `apply --memory` replaces.
std::size_t default_stream_budget();

// EXIF orientation (1..8) applied to the pixels: the image as a viewer shows it.
Image apply_orientation(const ImageView& src, int orientation);

}  // namespace tf
