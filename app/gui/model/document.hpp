// The open image: its file, its current pixels (the original samples, any pixel type), the
// paint-ready copy, the proxy pyramid, and the undo stack of applied filters.
#pragma once
#include <QImage>
#include <QObject>
#include <QString>
#include <QUndoStack>
#include <memory>

#include "mip_levels.hpp"
#include "tilefilter/image.hpp"
#include "tilefilter/io.hpp"
#include "tilefilter/pyramid.hpp"

namespace tf::gui {

// One version of the pixels. Everything in it is made off the GUI thread (make_state).
struct DocumentState {
  Image image;
  ShownImage display;
  std::shared_ptr<const ImagePyramid> pyramid;
  ImageInfo file;  // what the file held (metadata, stored channels); load_state fills it
};

// Builds the display copy and the pyramid; `display` may be passed in when already made.
DocumentState make_state(Image image, ShownImage display = {});
// Decodes a file into a state. Throws tf::Error naming the file and the reason.
DocumentState load_state(const QString& path);

class ImageDocument : public QObject {
  Q_OBJECT
 public:
  explicit ImageDocument(QObject* parent = nullptr);

  bool empty() const { return state_.image.empty(); }
  const DocumentState& state() const { return state_; }
  const Image& image() const { return state_.image; }
  // What Save writes besides the pixels: the opened file's EXIF, ICC and XMP, and gray+alpha
  // written back as such.
  const Metadata& metadata() const { return file_.metadata; }
  WriteOptions write_options(int quality) const;
  QString path() const { return path_; }  // empty for generated images
  QString display_name() const { return name_; }
  bool modified() const { return !undo_.isClean(); }
  QUndoStack* undo_stack() { return &undo_; }

  // A newly opened (or generated) image: the undo history starts over.
  void reset(const QString& path, const QString& name, DocumentState state);
  // Pixels from Apply, undo or redo.
  void set_state(DocumentState state);
  void mark_saved(const QString& path);

 signals:
  void image_changed();
  void title_changed();

 private:
  DocumentState state_;
  ImageInfo file_;
  QString path_, name_;
  QUndoStack undo_;
};

}  // namespace tf::gui
