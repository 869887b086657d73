// The application's identity and resources, below every window: names for QSettings and
// --version, the compiled-in icons and presets, the installed samples and presets, and the PNG
// screenshot of a widget.
#pragma once
class QString;
class QWidget;

namespace tf::gui {

// Organization and application names for QSettings, QStandardPaths and --version.
void set_application_identity();
// Registers the icons and presets compiled into tf_gui_lib (once; harmless to repeat).
void init_resources();
// Renders a top-level widget to a PNG (works on the offscreen platform too). Returns false and says
// why on stderr when it cannot write the file.
bool save_screenshot(QWidget* widget, const QString& path);
// The folder of the bundled "samples" or "presets": <prefix>/share/tilefilter/WHAT beside the
// executable's <prefix>/bin when installed, else the source tree's resources/WHAT (a build tree);
// empty when neither exists.
QString data_dir(const QString& what);

}  // namespace tf::gui
