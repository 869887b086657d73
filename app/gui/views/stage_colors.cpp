#include "stage_colors.hpp"

#include <QObject>

namespace tf::gui {

QColor stage_color(StageKind stage) {
  switch (stage) {
    case StageKind::Upload: return QColor(0x4e, 0x9a, 0xe6);    // blue
    case StageKind::Kernel: return QColor(0x5c, 0xc2, 0x6a);    // green
    case StageKind::Download: return QColor(0xf0, 0x9c, 0x3c);  // orange
    case StageKind::Compute: return QColor(0x3f, 0xb8, 0xaf);   // teal
    case StageKind::Decode: return QColor(0xa3, 0x7c, 0xd6);    // violet
    case StageKind::Encode: return QColor(0xd6, 0x6f, 0x9e);    // pink
  }
  return Qt::gray;
}

QColor idle_color() { return QColor(0x6b, 0x6f, 0x76); }

QString stage_label(StageKind stage) {
  switch (stage) {
    case StageKind::Upload: return QObject::tr("Upload");
    case StageKind::Kernel: return QObject::tr("Kernel");
    case StageKind::Download: return QObject::tr("Download");
    case StageKind::Compute: return QObject::tr("Compute");
    case StageKind::Decode: return QObject::tr("Decode");
    case StageKind::Encode: return QObject::tr("Encode");
  }
  return {};
}

}  // namespace tf::gui
