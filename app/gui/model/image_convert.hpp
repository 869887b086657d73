// Between core's images and what Qt can paint. 8-bit images are shown without a copy (the QImage
// keeps the tf::Image's storage alive); 16-bit and float images are reduced to 8 bits for display
// only — the document keeps the original samples.
#pragma once
#include <QImage>
#include <QString>

#include "tilefilter/image/image.hpp"

namespace tf::gui {

// A QImage that shows `image`. Shares pixels for u8 (the QImage must not be written to).
QImage to_display_image(const Image& image);

// "RGB u8", "Gray u16" (what the title bar and the status bar say about an image).
QString describe_format(const Format& format);

// The QImage format a u8 image of this channel count is shown with.
QImage::Format display_format(int channels);

}  // namespace tf::gui
