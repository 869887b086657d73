// The application's look: Fusion with a dark palette (image tools are dark so that the image, not
// the chrome, carries the colour), or the platform's light palette.
#pragma once
class QApplication;

namespace tf::gui {
void apply_theme(QApplication& app, bool dark);
}
