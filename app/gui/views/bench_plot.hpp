// `tilefilter bench --json` as a picture: Gpix/s per workload, one chart for device-resident runs
// (kernels only) and one for host-resident runs (end to end over PCIe), a bar per device count.
// `tilefilter-gui --bench-plot bench.json --plot-out bench.png` renders it without a window.
#pragma once
#include <QString>
#include <QWidget>

namespace tf::gui {

// Builds the two charts from the JSON text; on bad input returns nullptr and says why in `error`.
QWidget* make_bench_plot(const QByteArray& json, QString* error, QWidget* parent = nullptr);

// Reads `json_path`, renders the charts at `size` into `png_path`; 0 on success, else prints the
// file and the reason to stderr and returns 1.
int write_bench_plot(const QString& json_path, const QString& png_path, QSize size = {1500, 620});

}  // namespace tf::gui
