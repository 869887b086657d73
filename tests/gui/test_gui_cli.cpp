// tilefilter-gui as a program: --help, --screenshot, which the README images are made with, and
// --bench-plot, which draws `tilefilter bench --json` output.
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QProcess>
#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChartView>

#include "gui_test_support.hpp"
#include "views/bench_plot.hpp"

namespace tf::gui {
namespace {

using namespace tf::test;

struct GuiRun {
  int code = -1;
  QString output;
};

GuiRun run_gui(const QStringList& args, int timeout_ms = 60000, const QStringList& extra_env = {}) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  for (const QString& e : extra_env) env.insert(e.section('=', 0, 0), e.section('=', 1));
  p.setProcessEnvironment(env);
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(QStringLiteral(TF_GUI_PATH), args);
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromLocal8Bit(p.readAll())};
}

TEST(GuiCommandLine, HelpDocumentsTheOptions) {
  ensure_gui_app();
  const GuiRun r = run_gui({"--help"});
  EXPECT_EQ(r.code, 0) << r.output.toStdString();
  for (const char* option : {"--filter", "--devices", "--screenshot", "--generate", "--border", "[image]"})
    EXPECT_TRUE(r.output.contains(option)) << option;
  EXPECT_EQ(run_gui({"--filter", "nosuch", "x.png"}).code, 2);
  EXPECT_EQ(run_gui({"--border", "mirror"}).code, 2);
}

TEST(GuiCommandLine, ScreenshotAfterTheJob) {
  ensure_gui_app();
  TempDir dir;
  const QString image = write_image(dir, "in.png", 240, 160);
  const QString shot = QString::fromStdString(dir / "shot.png");
  const GuiRun r = run_gui({image, "--filter", "gaussian:sigma=2", "--filter", "sharpen", "--devices", "cpu:2",
                            "--window", "1000x700", "--screenshot", shot});
  ASSERT_EQ(r.code, 0) << r.output.toStdString();
  const QImage png(shot);
  ASSERT_FALSE(png.isNull());
  EXPECT_EQ(png.size(), QSize(1000, 700));
  // A file that cannot be read ends the run with an error instead of a screenshot.
  const GuiRun bad = run_gui({QString::fromStdString(dir / "missing.png"), "--screenshot", shot + "2"});
  EXPECT_EQ(bad.code, 1) << bad.output.toStdString();
  EXPECT_FALSE(QFileInfo::exists(shot + "2"));
}

// A large document (TF_GUI_LARGE_BYTES: every file is one) zoomed in with a filter, then applied: each
// screenshot comes once the region, or the streamed Apply, has finished.
TEST(GuiCommandLine, ScreenshotOfALargeDocumentZoomedInAndApplied) {
  ensure_gui_app();
  TempDir dir;
  const QString image = write_image(dir, "in.png", 640, 480);
  const QString shot = QString::fromStdString(dir / "shot.png");
  const QStringList large{"TF_GUI_LARGE_BYTES=1"};
  const QStringList common{image, "--filter", "gaussian:sigma=2", "--devices", "cpu", "--timeout", "50"};
  const GuiRun zoomed = run_gui(common + QStringList{"--zoom", "400", "--screenshot", shot}, 60000, large);
  ASSERT_EQ(zoomed.code, 0) << zoomed.output.toStdString();
  EXPECT_FALSE(QImage(shot).isNull());
  const GuiRun applied = run_gui(common + QStringList{"--apply", "--screenshot", shot + "2.png"}, 60000, large);
  ASSERT_EQ(applied.code, 0) << applied.output.toStdString();
  EXPECT_FALSE(QImage(shot + "2.png").isNull());
}

// Two workloads, both modes, one and two devices, as `tilefilter bench --json` writes them.
const char* kBenchJson = R"({"date": "2026-11-22", "runtime": "CUDA runtime 13.0", "border": "reflect101",
  "image": {"width": 8192, "height": 8192, "format": "RGBA u8"},
  "devices": [{"id": "gpu0", "name": "NVIDIA H200"}, {"id": "gpu1", "name": "NVIDIA H200"}],
  "results": [
    {"workload": "separable 9 taps", "mode": "resident", "devices": 1, "gigapixels_per_s": 86.6},
    {"workload": "separable 9 taps", "mode": "resident", "devices": 2, "gigapixels_per_s": 170.1},
    {"workload": "separable 9 taps", "mode": "host", "devices": 1, "gigapixels_per_s": 9.88},
    {"workload": "separable 9 taps", "mode": "host", "devices": 2, "gigapixels_per_s": 15.3},
    {"workload": "2-D 31x31", "mode": "resident", "devices": 1, "gigapixels_per_s": 5.89},
    {"workload": "2-D 31x31", "mode": "resident", "devices": 2, "gigapixels_per_s": 11.7},
    {"workload": "2-D 31x31", "mode": "host", "devices": 1, "gigapixels_per_s": 5.56},
    {"workload": "2-D 31x31", "mode": "host", "devices": 2, "gigapixels_per_s": 9.69}]})";

TEST(BenchPlot, ChartsHoldTheMeasuredRates) {
  ensure_gui_app();
  QString error;
  std::unique_ptr<QWidget> plot(make_bench_plot(kBenchJson, &error));
  ASSERT_NE(plot, nullptr) << error.toStdString();
  const auto views = plot->findChildren<QChartView*>();
  ASSERT_EQ(views.size(), 2);  // resident, host
  auto* bars = qobject_cast<QBarSeries*>(views[0]->chart()->series().value(0));
  ASSERT_NE(bars, nullptr);
  ASSERT_EQ(bars->count(), 2);  // 1 GPU, 2 GPUs
  EXPECT_DOUBLE_EQ(bars->barSets()[0]->at(0), 86.6);
  EXPECT_DOUBLE_EQ(bars->barSets()[1]->at(1), 11.7);
  auto* host = qobject_cast<QBarSeries*>(views[1]->chart()->series().value(0));
  ASSERT_NE(host, nullptr);
  EXPECT_DOUBLE_EQ(host->barSets()[1]->at(0), 15.3);
  // Not bench output: no widget, a reason.
  EXPECT_EQ(make_bench_plot("{\"results\": []}", &error), nullptr);
  EXPECT_FALSE(error.isEmpty());
  EXPECT_EQ(make_bench_plot("not json", &error), nullptr);
}

TEST(GuiCommandLine, BenchPlotWritesAPng) {
  ensure_gui_app();
  TempDir dir;
  const QString json = QString::fromStdString(dir / "bench.json"), png = QString::fromStdString(dir / "bench.png");
  QFile f(json);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(kBenchJson);
  f.close();
  const GuiRun r = run_gui({"--bench-plot", json, "--plot-out", png});
  ASSERT_EQ(r.code, 0) << r.output.toStdString();
  const QImage image(png);
  ASSERT_FALSE(image.isNull());
  EXPECT_EQ(image.size(), QSize(1500, 620));
  // A broken file names itself and writes nothing; --bench-plot needs --plot-out.
  QFile bad(json);
  ASSERT_TRUE(bad.open(QIODevice::WriteOnly));
  bad.write("{\"results\": 3");
  bad.close();
  const GuiRun broken = run_gui({"--bench-plot", json, "--plot-out", png + "2"});
  EXPECT_EQ(broken.code, 1);
  EXPECT_TRUE(broken.output.contains(json)) << broken.output.toStdString();
  EXPECT_FALSE(QFileInfo::exists(png + "2"));
  EXPECT_EQ(run_gui({"--bench-plot", json}).code, 2);
}

}  // namespace
}  // namespace tf::gui
