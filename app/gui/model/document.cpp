#include "document.hpp"

#include <QDir>
#include <QFileInfo>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>

#include "platform/device_hub.hpp"
#include "preview_engine.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/overview.hpp"
#include "tilefilter/io/stream.hpp"

namespace tf::gui {

DocumentState make_state(Image image, ShownImage display) {
  DocumentState s;
  s.display = display.is_null() ? make_shown(PreviewEngine::paint_ready(image)) : std::move(display);
  s.pyramid = std::make_shared<const ImagePyramid>(image);
  s.image = std::move(image);
  return s;
}

namespace {
std::size_t initial_large_bytes() {
  if (const char* env = std::getenv("TF_GUI_LARGE_BYTES")) return std::strtoull(env, nullptr, 10);
  return 512ULL << 20;
}
std::atomic<std::size_t> large_bytes{initial_large_bytes()};
}  // namespace

std::size_t large_image_bytes() { return large_bytes; }
void set_large_image_bytes(std::size_t bytes) { large_bytes = bytes; }

std::size_t large_document_budget() {
  static const std::size_t budget = [] {
    const char* env = std::getenv("TF_GUI_MEMORY_BYTES");
    const std::size_t bytes = env ? std::strtoull(env, nullptr, 10) : 0;
    return bytes ? bytes : std::size_t{1} << 30;
  }();
  return budget;
}

std::size_t state_bytes(const DocumentState& state) {
  const auto pixels = static_cast<std::size_t>(state.image.width()) * static_cast<std::size_t>(state.image.height());
  // A pyramid or a set of mips adds a third of its base level; the display copy is 4 bytes a pixel.
  return pixels * state.image.format().pixel_bytes() * 4 / 3 + pixels * 4 * 4 / 3;
}

int large_undo_steps(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 1);
  // The current state and the preview beside it are always held.
  const std::size_t fixed = default_stream_budget() + kProcessAllowance + 2 * bytes;
  const std::size_t budget = large_document_budget();
  if (budget <= fixed) return 1;
  return static_cast<int>(std::clamp<std::size_t>((budget - fixed) / bytes, 1, 20));
}

namespace {
DocumentState large_state(ImageReader& reader, const std::string& path, std::chrono::steady_clock::time_point t0,
                          const std::function<void(double)>& progress, const std::atomic<bool>* cancel) {
  const ImageInfo& info = reader.info();
  auto large = std::make_shared<LargeSource>();
  large->path = path;
  large->width = info.width;
  large->height = info.height;
  large->factor = overview_factor(info.width, info.height, kOverviewSide);
  DocumentState s = make_state(DeviceHub::in_host_memory(read_overview(reader, large->factor, progress, cancel)));
  large->open_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.file = info;
  s.large = std::move(large);
  return s;
}
}  // namespace

DocumentState load_state(const QString& path, const std::function<void(double)>& progress) {
  const std::string file_path = path.toStdString();
  const auto t0 = std::chrono::steady_clock::now();
  auto reader = open_image(file_path, Limits{});
  const ImageInfo info = reader->info();
  const auto bytes = static_cast<std::size_t>(info.width) * info.height * info.format.pixel_bytes();
  if (info.access == RowAccess::Whole || bytes <= large_image_bytes()) {
    // Formats that cannot stream were decoded at open; small files are decoded whole.
    Image image = info.access == RowAccess::Whole
                      ? read_whole(*reader, DeviceHub::host_allocator())
                      : (reader.reset(), decode_file(file_path, Limits{}, DeviceHub::host_allocator()));
    DocumentState s = make_state(std::move(image));
    s.file = info;
    return s;
  }
  return large_state(*reader, file_path, t0, progress, nullptr);
}

DocumentState load_large_state(const std::string& path, const std::function<void(double)>& progress,
                               const std::atomic<bool>* cancel) {
  const auto t0 = std::chrono::steady_clock::now();
  auto reader = open_image(path, Limits{});
  return large_state(*reader, path, t0, progress, cancel);
}

WriteOptions ImageDocument::write_options(const JpegChoice& jpeg) const {
  WriteOptions o;
  o.quality = jpeg.quality;
  o.subsampling = jpeg.subsampling;
  o.gray_alpha = file_.stored_channels == 2;
  keep_input_compression(o, file_);  // as filter_file does for `tilefilter apply`
  return o;
}

ImageDocument::ImageDocument(QObject* parent) : QObject(parent) {
  undo_.setUndoLimit(20);
  connect(&undo_, &QUndoStack::cleanChanged, this, &ImageDocument::title_changed);
}

void ImageDocument::reset(const QString& path, const QString& name, DocumentState state) {
  undo_.clear();
  // A large document keeps as many undo steps as its overviews fit in the memory budget (the limit
  // can only change while the stack is empty).
  undo_.setUndoLimit(state.large ? large_undo_steps(state_bytes(state)) : 20);
  temp_folder_.reset();  // files of the previous document go with its states
  path_ = path;
  name_ = name.isEmpty() ? QFileInfo(path).fileName() : name;
  file_ = state.file;  // later states (filters applied) keep the opened file's metadata
  state_ = std::move(state);
  emit image_changed();
  emit title_changed();
}

void ImageDocument::set_state(DocumentState state) {
  state_ = std::move(state);
  emit image_changed();
}

std::shared_ptr<QTemporaryDir> ImageDocument::temp_folder() {
  if (!temp_folder_) temp_folder_ = std::make_shared<QTemporaryDir>(QDir::tempPath() + "/tilefilter-doc-XXXXXX");
  return temp_folder_;
}

void ImageDocument::mark_saved(const QString& path) {
  path_ = path;
  name_ = QFileInfo(path).fileName();
  undo_.setClean();
  emit title_changed();
}

}  // namespace tf::gui
