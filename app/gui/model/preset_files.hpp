// Preset files as the GUI reaches them: bundled ones from the resources (":/presets"), the user's
// anywhere. The format and its checks are core's (tilefilter/preset.hpp), shared with the CLI.
#pragma once
#include <QString>
#include <QStringList>

#include "tilefilter/filters/preset.hpp"

namespace tf::gui {

Preset read_preset(const QString& path);                       // a file or a resource; throws tf::Error
void write_preset(const QString& path, const Preset& preset);  // throws tf::Error
QStringList bundled_presets();                                 // resource paths, sorted

}  // namespace tf::gui
