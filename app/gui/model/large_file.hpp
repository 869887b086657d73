// Work on a large document's file (LargeSource), off the GUI thread and without Qt widgets: the
// visible region read at full resolution and filtered on the devices (the zoomed-in live preview),
// and Apply, which streams the chain over the whole file into a temporary file of the document.
#pragma once
#include <QString>
#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "document.hpp"
#include "filter_entry.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/io/stream.hpp"

namespace tf::gui {

// The largest region the view reads at full resolution (the visible part; the halo comes on top).
constexpr long long kRegionPixels = 16LL << 20;

// Whether `region` of a file can be read in the time a preview may take. TIFF strips and tiles are
// read where they lie; PNG and JPEG decode from the top, so they are read down to the region only
// while the rows above and in it hold no more bytes than a file that opens whole (large_image_bytes):
// further down the view keeps the overview and its filtered preview.
bool region_reads_quickly(const ImageInfo& file, const Rect& region);

struct RegionPreview {
  Image before;  // `visible` of the file as it is
  Image after;   // filtered by the chain, empty without one
  std::shared_ptr<const JobReport> report;
  double read_ms = 0, filter_ms = 0;
};

// `visible` of `path` at full resolution and, when `chain` has filters, filtered: the region grown by
// the chain's halo (clipped to the image) is read and filtered on `devices` under the GUI's device
// lock, then cropped to `visible` — the same bits as the whole file filtered there (docs/design.md,
// contract 2). Wrap borders read the far edge of the image: no `after` for them. Throws tf::Error
// (Cancelled when `cancel` became true).
RegionPreview preview_file_region(const std::string& path, const Rect& visible, const ChainSettings& chain,
                                  const std::string& devices, const std::atomic<bool>* cancel);

// A file the document made (Apply's result), removed with its last reference: when neither the
// document nor an undo step refers to it any more. The folder is the document's temporary folder,
// removed when its last file and the document let go of it.
class TemporaryFile {
 public:
  TemporaryFile(std::string path, std::shared_ptr<const void> folder);
  ~TemporaryFile();
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::shared_ptr<const void> folder_;
};

struct LargeApplied {
  DocumentState state;  // the result's overview, its LargeSource owning `output`
  StreamReport report;
};

// Apply on a large document: `chain` streamed over `source`'s file into `output` (a tiled TIFF,
// tf::filter_file, band by band on `devices`), then the result's overview read as a new state whose
// LargeSource owns the file. `progress` gets 0..1 over both; `cancel` throws tf::Error (Cancelled),
// leaving nothing under `output`.
LargeApplied apply_to_file(const LargeSource& source, const std::string& output, std::shared_ptr<const void> folder,
                           const ChainSettings& chain, const std::string& devices, const WriteOptions& write,
                           const std::function<void(double)>& progress, const std::atomic<bool>* cancel);

}  // namespace tf::gui
