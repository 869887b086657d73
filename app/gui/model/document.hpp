// The open image: its file, its current pixels (the original samples, any pixel type), the
// paint-ready copy, the proxy pyramid, and the undo stack of applied filters.
#pragma once
#include <QImage>
#include <QObject>
#include <QString>
#include <QTemporaryDir>
#include <QUndoStack>
#include <atomic>
#include <functional>
#include <memory>

#include "mip_levels.hpp"
#include "tilefilter/image/image.hpp"
#include "tilefilter/image/pyramid.hpp"
#include "tilefilter/io/io.hpp"

namespace tf::gui {

// A file too large to decode whole: it stays on disk, the state's image is its overview (a box
// average by `factor`), and Save and Apply stream the file through the chain (tf::filter_file).
struct LargeSource {
  std::string path;
  int width = 0, height = 0;          // of the file
  int factor = 1;                     // file pixels per overview pixel, per side
  double open_s = 0;                  // time to read the overview
  std::shared_ptr<const void> owner;  // Apply's results: removes the file with the last state using it
};

// One version of the pixels. Everything in it is made off the GUI thread (make_state).
struct DocumentState {
  Image image;
  ShownImage display;
  std::shared_ptr<const ImagePyramid> pyramid;
  ImageInfo file;                            // what the file held (metadata, stored channels); load_state fills it
  std::shared_ptr<const LargeSource> large;  // set when the file stays on disk
};

// Files whose decoded pixels would take more bytes than this open as large documents (default
// 512 MiB, or TF_GUI_LARGE_BYTES from the environment); overviews fit in kOverviewSide pixels.
std::size_t large_image_bytes();
void set_large_image_bytes(std::size_t bytes);
constexpr int kOverviewSide = 4096;

// The host memory the GUI keeps a large document within (default 1 GiB, or TF_GUI_MEMORY_BYTES
// from the environment): the bands Save As and Apply stream (tf::default_stream_budget()), the
// process itself (kProcessAllowance: Qt, libraries, fonts, CPU tile buffers) and the on-screen
// images: the current state, the preview, and as many undo steps as fit (large_undo_steps).
std::size_t large_document_budget();
constexpr std::size_t kProcessAllowance = 320ULL << 20;
// Bytes a state holds in memory: its overview with its pyramid, and the display copy with its mips.
std::size_t state_bytes(const DocumentState& state);
// The undo steps a large document keeps (1..20) when each state holds `bytes`: older steps are
// dropped, and with them the files their Apply wrote.
int large_undo_steps(std::size_t bytes);

// Builds the display copy and the pyramid; `display` may be passed in when already made.
DocumentState make_state(Image image, ShownImage display = {});
// Decodes a file into a state (an overview of a large file, reporting `progress` 0..1). Throws tf::Error naming the
// file and the reason.
DocumentState load_state(const QString& path, const std::function<void(double)>& progress = {});
// A large document's state for `path` whatever its size: its overview, read band by band.
DocumentState load_large_state(const std::string& path, const std::function<void(double)>& progress = {},
                               const std::atomic<bool>* cancel = nullptr);

// How a JPEG (or WebP) is to be written, as the Save As and batch dialogs ask it: quality 0 and
// FromInput leave both to core's rule (the input's, kDefaultQuality for an input that is not a JPEG),
// the same as `tilefilter apply` without --quality and --subsampling. The GUI keeps no number of its own.
struct JpegChoice {
  JpegChoice(int q = 0, ChromaSubsampling s = ChromaSubsampling::FromInput) : quality(q), subsampling(s) {}
  int quality;
  ChromaSubsampling subsampling;
};

class ImageDocument : public QObject {
  Q_OBJECT
 public:
  explicit ImageDocument(QObject* parent = nullptr);

  bool empty() const { return state_.image.empty(); }
  const DocumentState& state() const { return state_; }
  const Image& image() const { return state_.image; }
  const LargeSource* large() const { return state_.large.get(); }
  int width() const { return large() ? large()->width : state_.image.width(); }  // of the file
  int height() const { return large() ? large()->height : state_.image.height(); }
  // What Save writes besides the pixels: the opened file's EXIF, ICC and XMP, gray+alpha written back
  // as such, and what the CLI keeps of the input's coding (a JPEG's quality and subsampling, a TIFF's
  // compression) where `jpeg` leaves it to the input.
  const Metadata& metadata() const { return file_.metadata; }
  WriteOptions write_options(const JpegChoice& jpeg) const;
  QString path() const { return path_; }  // empty for generated images
  QString display_name() const { return name_; }
  bool modified() const { return !undo_.isClean(); }
  QUndoStack* undo_stack() { return &undo_; }
  const QUndoStack* undo_stack() const { return &undo_; }

  // A newly opened (or generated) image: the undo history starts over.
  void reset(const QString& path, const QString& name, DocumentState state);
  // Pixels from Apply, undo or redo.
  void set_state(DocumentState state);
  void mark_saved(const QString& path);
  // The folder for files this document makes (Apply on a large document), made on first use. Files
  // in it hold it too (LargeSource::owner), so it goes when the document and its undo steps let go.
  std::shared_ptr<QTemporaryDir> temp_folder();

 signals:
  void image_changed();
  void title_changed();

 private:
  DocumentState state_;
  ImageInfo file_;
  QString path_, name_;
  QUndoStack undo_;
  std::shared_ptr<QTemporaryDir> temp_folder_;
};

}  // namespace tf::gui
