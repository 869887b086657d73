// The two charts of the speedup demo, built from core's SpeedupResult: speedup against the ideal
// line, and the time split of the devices (upload, kernel, download or compute, idle) per device count.
#pragma once
#include <QtCharts/QChart>

#include "tilefilter/speedup.hpp"

namespace tf::gui {

QChart* make_speedup_chart(const SpeedupResult& result);
QChart* make_split_chart(const SpeedupResult& result);
// Colours and fonts that fit the application's palette.
void style_chart(QChart* chart, const QPalette& palette);

}  // namespace tf::gui
