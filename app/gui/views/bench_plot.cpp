#include "bench_plot.hpp"

#include <QFile>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QVBoxLayout>
#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChartView>
#include <cstdio>
#include <memory>
#include <set>
#include <vector>

#include "speedup_charts.hpp"

namespace tf::gui {

namespace {

struct Point {
  QString workload, mode;
  int devices = 1;
  double gpix = 0;
};

QChart* bar_chart(const QString& title, const std::vector<Point>& points, const QStringList& workloads) {
  std::set<int> counts;
  for (const auto& p : points) counts.insert(p.devices);
  auto* series = new QBarSeries;
  double top = 0;
  for (int n : counts) {
    auto* set = new QBarSet(n == 1 ? QObject::tr("1 GPU") : QObject::tr("%1 GPUs").arg(n));
    for (const auto& w : workloads) {
      double v = 0;
      for (const auto& p : points)
        if (p.workload == w && p.devices == n) v = p.gpix;
      *set << v;
      top = std::max(top, v);
    }
    series->append(set);
  }
  series->setLabelsVisible(true);
  series->setLabelsFormat(QStringLiteral("@value"));
  series->setLabelsPrecision(3);
  series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
  auto* chart = new QChart;
  chart->setTitle(title);
  add_bar_series(chart, series, workloads, QString(), QObject::tr("Gpix/s"), top > 0 ? top * 1.15 : 1);
  return chart;
}

}  // namespace

QWidget* make_bench_plot(const QByteArray& json, QString* error, QWidget* parent) {
  QJsonParseError parse{};
  const QJsonDocument doc = QJsonDocument::fromJson(json, &parse);
  if (doc.isNull() || !doc.isObject()) {
    *error = QObject::tr("not JSON from `tilefilter bench --json` (%1)").arg(parse.errorString());
    return nullptr;
  }
  const QJsonObject root = doc.object();
  std::vector<Point> resident, host;
  QStringList workloads;
  for (const auto& v : root.value("results").toArray()) {
    const QJsonObject r = v.toObject();
    Point p{r.value("workload").toString(), r.value("mode").toString(), r.value("devices").toInt(1),
            r.value("gigapixels_per_s").toDouble()};
    if (p.workload.isEmpty() || p.gpix <= 0) continue;
    if (!workloads.contains(p.workload)) workloads << p.workload;
    (p.mode == "resident" ? resident : host).push_back(p);
  }
  if (resident.empty() && host.empty()) {
    *error = QObject::tr("no results with a workload and a rate (\"results\": [...])");
    return nullptr;
  }
  QString gpu;
  const QJsonArray devices = root.value("devices").toArray();
  if (!devices.isEmpty()) gpu = devices.first().toObject().value("name").toString();
  const QJsonObject image = root.value("image").toObject();

  auto* widget = new QWidget(parent);
  widget->setObjectName("bench-plot");
  auto* column = new QVBoxLayout(widget);
  auto* caption = new QLabel(QObject::tr("tilefilter bench, %1: %2x%3 %4, border %5, %6 × %7 — %8")
                                 .arg(root.value("date").toString())
                                 .arg(image.value("width").toInt())
                                 .arg(image.value("height").toInt())
                                 .arg(image.value("format").toString(), root.value("border").toString())
                                 .arg(devices.size())
                                 .arg(gpu.isEmpty() ? QObject::tr("device") : gpu, root.value("runtime").toString()),
                             widget);
  column->addWidget(caption);
  auto* row = new QHBoxLayout;
  column->addLayout(row, 1);
  auto add = [&](const QString& title, const std::vector<Point>& points) {
    if (points.empty()) return;
    QChart* chart = bar_chart(title, points, workloads);
    style_chart(chart, widget->palette());
    auto* view = new QChartView(chart, widget);
    view->setRenderHint(QPainter::Antialiasing);
    row->addWidget(view);
  };
  add(QObject::tr("Image on the GPU (kernels only)"), resident);
  add(QObject::tr("Image in host memory (upload, kernels, download)"), host);
  return widget;
}

int write_bench_plot(const QString& json_path, const QString& png_path, QSize size) {
  QFile f(json_path);
  if (!f.open(QIODevice::ReadOnly)) {
    std::fprintf(stderr, "tilefilter-gui: %s: %s\n", qPrintable(json_path), qPrintable(f.errorString()));
    return 1;
  }
  QString error;
  std::unique_ptr<QWidget> plot(make_bench_plot(f.readAll(), &error));
  if (!plot) {
    std::fprintf(stderr, "tilefilter-gui: %s: %s\n", qPrintable(json_path), qPrintable(error));
    return 1;
  }
  plot->resize(size);
  plot->setAttribute(Qt::WA_DontShowOnScreen);
  plot->show();
  const QPixmap shot = plot->grab();
  // Written beside the target and renamed into place: a failed write leaves no partial PNG.
  const QString tmp = png_path + QStringLiteral(".tmp.png");
  if (!shot.save(tmp, "PNG") || (QFile::exists(png_path) && !QFile::remove(png_path)) ||
      !QFile::rename(tmp, png_path)) {
    QFile::remove(tmp);
    std::fprintf(stderr, "tilefilter-gui: cannot write %s\n", qPrintable(png_path));
    return 1;
  }
  std::printf("tilefilter-gui: bench plot %dx%d written to %s\n", shot.width(), shot.height(), qPrintable(png_path));
  return 0;
}

}  // namespace tf::gui
