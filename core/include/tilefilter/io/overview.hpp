// Reduced-resolution reads of images that need not fit in memory: an overview (a box average by a
// power of two, read band by band through an ImageReader) and a region at full resolution. The GUI
// shows a large image this way while the full image stays on disk; Qt-free so any front end can.
#pragma once
#include <atomic>
#include <functional>

#include "tilefilter/io/io.hpp"

namespace tf {

// The smallest power of two that brings `width` x `height` within `max_side` on the longer side.
int overview_factor(int width, int height, int max_side);

// The image averaged over `factor` x `factor` boxes (ceil(width / factor) x ceil(height / factor);
// the last row and column average what exists; integers rounded to nearest), read band by band
// from row 0 so peak memory is two bands of rows plus the overview. When the reader offers reduced
// levels (ImageInfo::levels: TIFF pyramids, JPEG DCT scaling) the coarsest one at least that size is
// read instead and averaged down to it (copied when it is that size; boxes fitted to the level's
// size when it is not the image's divided by a whole number); a level that cannot be read is given
// up for the full image. Bands are decoded while the previous one is averaged on `threads` threads
// (0: one a core; the result does not depend on it). Sequential readers must not have been read
// yet. `progress` gets 0..1; `cancel` throws tf::Error (Cancelled) between bands.
Image read_overview(ImageReader& reader, int factor, const std::function<void(double)>& progress = {},
                    const std::atomic<bool>* cancel = nullptr, int threads = 0);

// Rows and columns `region` of the image at full resolution (region inside the image). Random
// readers read only the rows it covers; Sequential readers must not have been read yet (the rows
// above it are read and dropped). Whole-access readers decoded at open and are just copied.
Image read_region(ImageReader& reader, const Rect& region);

}  // namespace tf
