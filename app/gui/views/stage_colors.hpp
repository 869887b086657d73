// One colour per kind of work, shared by the device cards, the timeline and the speedup chart, so a
// colour means the same thing everywhere.
#pragma once
#include <QColor>
#include <QString>

#include "tilefilter/engine/telemetry.hpp"

namespace tf::gui {

QColor stage_color(StageKind stage);
QColor idle_color();
QString stage_label(StageKind stage);  // "Upload", "Kernel", ...

}  // namespace tf::gui
