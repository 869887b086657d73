#include "speedup_charts.hpp"

#include <QPalette>
#include <QPen>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>

#include "stage_colors.hpp"

namespace tf::gui {

namespace {

// Before the first run a chart has its title and nothing else: no axes that count nothing.
QChart* empty_chart(const QString& title) {
  auto* chart = new QChart;
  chart->setTitle(title);
  chart->legend()->hide();
  return chart;
}

}  // namespace

QChart* make_speedup_chart(const SpeedupResult& r) {
  if (r.points.empty()) return empty_chart(QObject::tr("Speedup over one device"));
  auto* chart = new QChart;
  chart->setTitle(QObject::tr("Speedup over one device"));
  auto* ideal = new QLineSeries;
  ideal->setName(QObject::tr("ideal"));
  auto* measured = new QLineSeries;
  measured->setName(QObject::tr("measured"));
  auto* dots = new QScatterSeries;
  dots->setMarkerSize(9);
  int n = 1;
  double top = 1;
  for (const auto& p : r.points) {
    ideal->append(p.device_count, p.ideal);
    measured->append(p.device_count, p.speedup);
    dots->append(p.device_count, p.speedup);
    n = std::max(n, p.device_count);
    top = std::max({top, p.ideal, p.speedup});
  }
  QPen dashed(QColor(160, 160, 160), 1.5, Qt::DashLine);
  ideal->setPen(dashed);
  const QColor accent = stage_color(StageKind::Kernel);
  measured->setPen(QPen(accent, 2.5));
  dots->setColor(accent);
  dots->setBorderColor(accent);
  chart->addSeries(ideal);
  chart->addSeries(measured);
  chart->addSeries(dots);
  auto* x = new QValueAxis;
  x->setTitleText(QObject::tr("devices"));
  x->setRange(1, std::max(2, n));
  x->setTickCount(std::max(2, n));
  x->setLabelFormat("%d");
  auto* y = new QValueAxis;
  y->setTitleText(QObject::tr("speedup ×"));
  y->setRange(0, top * 1.15);
  y->applyNiceNumbers();
  y->setLabelFormat("%.1f");
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (auto* s : chart->series()) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
  chart->legend()->markers(dots).first()->setVisible(false);
  chart->legend()->setAlignment(Qt::AlignBottom);
  return chart;
}

QChart* make_split_chart(const SpeedupResult& r) {
  if (r.points.empty()) return empty_chart(QObject::tr("Time per device (median run)"));
  auto* chart = new QChart;
  chart->setTitle(QObject::tr("Time per device (median run)"));
  struct Part {
    QString name;
    QColor color;
    double DeviceSummary::*field;
  };
  const Part parts[] = {
      {stage_label(StageKind::Upload), stage_color(StageKind::Upload), &DeviceSummary::upload_s},
      {stage_label(StageKind::Kernel), stage_color(StageKind::Kernel), &DeviceSummary::kernel_s},
      {stage_label(StageKind::Download), stage_color(StageKind::Download), &DeviceSummary::download_s},
      {stage_label(StageKind::Compute), stage_color(StageKind::Compute), &DeviceSummary::compute_s},
      {QObject::tr("Idle"), idle_color(), &DeviceSummary::idle_s}};
  auto* series = new QStackedBarSeries;
  QStringList categories;
  for (const auto& p : r.points) categories << QString::number(p.device_count);
  double top = 0;
  std::vector<double> totals(r.points.size(), 0.0);
  for (const Part& part : parts) {
    auto* set = new QBarSet(part.name);
    set->setColor(part.color);
    set->setBorderColor(part.color.darker(130));
    bool any = false;
    for (std::size_t i = 0; i < r.points.size(); ++i) {
      const auto& split = r.points[i].split;
      double sum = 0;
      for (const auto& d : split) sum += d.*(part.field);
      const double mean_ms = split.empty() ? 0 : 1e3 * sum / static_cast<double>(split.size());
      set->append(mean_ms);
      totals[i] += mean_ms;
      any = any || mean_ms > 0;
    }
    if (any) series->append(set);
    else delete set;
  }
  for (double t : totals) top = std::max(top, t);
  QValueAxis* y = add_bar_series(chart, series, categories, QObject::tr("devices"), QObject::tr("ms per device"),
                                 std::max(1e-3, top * 1.1));
  y->setLabelFormat(top < 10 ? "%.2f" : "%.0f");
  return chart;
}

QValueAxis* add_bar_series(QChart* chart, QAbstractSeries* series, const QStringList& categories,
                           const QString& x_title, const QString& y_title, double top) {
  chart->addSeries(series);
  auto* x = new QBarCategoryAxis;
  x->append(categories);
  if (!x_title.isEmpty()) x->setTitleText(x_title);
  auto* y = new QValueAxis;
  y->setTitleText(y_title);
  y->setRange(0, top);
  y->applyNiceNumbers();
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  chart->legend()->setAlignment(Qt::AlignBottom);
  return y;
}

void style_chart(QChart* chart, const QPalette& palette) {
  const QColor text = palette.color(QPalette::WindowText);
  chart->setBackgroundBrush(palette.color(QPalette::Base));
  chart->setBackgroundRoundness(4);
  chart->setTitleBrush(text);
  chart->legend()->setLabelColor(text);
  chart->setMargins(QMargins(4, 4, 4, 4));
  for (QAbstractAxis* axis : chart->axes()) {
    axis->setLabelsColor(text);
    axis->setTitleBrush(text);
    axis->setLinePenColor(palette.color(QPalette::Mid));
    axis->setGridLineColor(QColor(127, 127, 127, 60));
  }
}

}  // namespace tf::gui
