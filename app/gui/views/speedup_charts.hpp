// The two charts of the speedup demo, built from core's SpeedupResult: speedup against the ideal
// line, and the time split of the devices (upload, kernel, download or compute, idle) per device count.
#pragma once
#include <QtCharts/QChart>
#include <QtCharts/QValueAxis>

#include "tilefilter/engine/speedup.hpp"

namespace tf::gui {

QChart* make_speedup_chart(const SpeedupResult& result);
QChart* make_split_chart(const SpeedupResult& result);
// Adds `series` to `chart` over a category axis of `categories` (below, titled `x_title` unless
// empty) and a value axis from 0 to about `top` in nice numbers (left, titled `y_title`); the
// legend goes below. Returns the value axis for its label format.
QValueAxis* add_bar_series(QChart* chart, QAbstractSeries* series, const QStringList& categories,
                           const QString& x_title, const QString& y_title, double top);
// Colours and fonts that fit the application's palette.
void style_chart(QChart* chart, const QPalette& palette);

}  // namespace tf::gui
