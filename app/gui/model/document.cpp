#include "document.hpp"

#include <QFileInfo>

#include "platform/device_hub.hpp"
#include "preview_engine.hpp"
#include "tilefilter/codec.hpp"

namespace tf::gui {

DocumentState make_state(Image image, ShownImage display) {
  DocumentState s;
  s.display = display.is_null() ? make_shown(PreviewEngine::paint_ready(image)) : std::move(display);
  s.pyramid = std::make_shared<const ImagePyramid>(image);
  s.image = std::move(image);
  return s;
}

DocumentState load_state(const QString& path) {
  ImageInfo file;
  DocumentState s = make_state(decode_file(path.toStdString(), Limits{}, DeviceHub::host_allocator(), &file));
  s.file = std::move(file);
  return s;
}

WriteOptions ImageDocument::write_options(int quality) const {
  WriteOptions o;
  o.quality = quality;
  o.gray_alpha = file_.stored_channels == 2;
  return o;
}

ImageDocument::ImageDocument(QObject* parent) : QObject(parent) {
  undo_.setUndoLimit(20);
  connect(&undo_, &QUndoStack::cleanChanged, this, &ImageDocument::title_changed);
}

void ImageDocument::reset(const QString& path, const QString& name, DocumentState state) {
  undo_.clear();
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

void ImageDocument::mark_saved(const QString& path) {
  path_ = path;
  name_ = QFileInfo(path).fileName();
  undo_.setClean();
  emit title_changed();
}

}  // namespace tf::gui
