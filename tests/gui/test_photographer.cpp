// The GUI a photographer keeps open: sliders that suit their parameter and give up superseded
// previews, Save As that follows the typed name, actions greyed out without an image, messages that
// go on the next success, a quit prompt that says what would be lost, window geometry kept on
// screen, a device panel that names each worker and what bounded the job, a speedup demo whose
// advice follows its own measurement.
#include <QAction>
#include <QComboBox>
#include <QContextMenuEvent>
#include <QDir>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QStyle>
#include <QVBoxLayout>
#include <QtTest/QTest>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "dialogs/batch_dialog.hpp"
#include "dialogs/save_options_dialog.hpp"
#include "dialogs/speedup_dialog.hpp"
#include "main_window_fixture.hpp"
#include "panels/device_panel.hpp"
#include "panels/filter_panel.hpp"
#include "panels/param_editor.hpp"
#include "tilefilter/engine/speedup.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/io.hpp"
#include "views/image_view.hpp"
#include "views/worker_rows.hpp"

namespace tf::gui {
namespace {

using namespace tf::test;

class PhotographerTest : public MainWindowFixture {
 protected:
  double sigma() const { return window->filter_panel()->settings().filters.at(0).numbers.at("sigma"); }
};

// The handle's centre: where a person grabs it.
QPoint handle_centre(const QSlider* slider) {
  const int handle = slider->style()->pixelMetric(QStyle::PM_SliderLength, nullptr, slider);
  const int x =
      QStyle::sliderPositionFromValue(slider->minimum(), slider->maximum(), slider->value(), slider->width() - handle);
  return {x + handle / 2, slider->height() / 2};
}

// Drags the handle `pixels` to the right in steps of 5 px, each step a mouse event as the person's.
void drag(QSlider* slider, int pixels) {
  QPoint at = handle_centre(slider);
  QTest::mousePress(slider, Qt::LeftButton, Qt::NoModifier, at);
  for (int moved = 0; moved < pixels; moved += 5) {
    at.rx() += 5;
    QTest::mouseMove(slider, at);
  }
  QTest::mouseRelease(slider, Qt::LeftButton, Qt::NoModifier, at);
}

TEST(Sliders, LogarithmicSoftRangeAndTypedValuesBeyond) {
  ensure_gui_app();
  const ParamInfo& sigma = find_filter("gaussian")->params[0];
  const ParamInfo& radius = find_filter("gaussian")->params[1];
  const ParamInfo& amount = find_filter("sharpen")->params[0];
  EXPECT_TRUE(ParamEditor::logarithmic(sigma));
  EXPECT_FALSE(ParamEditor::logarithmic(amount));  // 0..10: linear, all of it on the slider
  EXPECT_EQ(ParamEditor::soft_max(amount), amount.max);
  EXPECT_LT(ParamEditor::soft_max(sigma), sigma.max);
  // Equal slider steps are equal ratios of sigma: 1 -> 2 takes as far as 10 -> 20.
  const int p1 = ParamEditor::slider_position(sigma, 1), p2 = ParamEditor::slider_position(sigma, 2);
  const int p10 = ParamEditor::slider_position(sigma, 10), p20 = ParamEditor::slider_position(sigma, 20);
  EXPECT_NEAR(p2 - p1, p20 - p10, 2);
  for (int pos : {0, 1, 250, 500, 999, 1000}) {  // there and back, within the soft range
    const double v = ParamEditor::slider_value(sigma, pos);
    EXPECT_GE(v, sigma.min);
    EXPECT_LE(v, ParamEditor::soft_max(sigma));
    EXPECT_NEAR(ParamEditor::slider_position(sigma, v), pos, 3) << v;
  }
  // A value typed past the soft range is kept; the slider rests at its end.
  ParamEditor editor(sigma);
  editor.show();
  auto* spin = editor.findChild<QDoubleSpinBox*>("param.sigma.spin");
  auto* slider = editor.findChild<QSlider*>("param.sigma.slider");
  spin->setValue(300);
  FilterEntry e = default_entry(*find_filter("gaussian"));
  editor.write_to(e);
  EXPECT_EQ(e.numbers.at("sigma"), 300);
  EXPECT_EQ(slider->value(), ParamEditor::kSliderSteps);
  EXPECT_TRUE(spin->toolTip().contains("type larger values")) << spin->toolTip().toStdString();
  // Radius 0 is ceil(3 sigma): the box says "auto", and so does the chain list.
  ParamEditor r(radius);
  EXPECT_EQ(r.findChild<QSpinBox*>("param.radius.spin")->text(), "auto");
  EXPECT_TRUE(entry_label(e).contains("radius auto")) << entry_label(e).toStdString();
}

// darktable's "right-click to type": a right-click on a slider puts the cursor in its spin box with the
// text selected, so typing replaces the value, also with one past the slider's soft range; the menu key
// does the same.
TEST(Sliders, RightClickToTypeAValue) {
  ensure_gui_app();
  const FilterInfo& gaussian = *find_filter("gaussian");
  QWidget panel;
  auto* layout = new QVBoxLayout(&panel);
  auto* sigma = new ParamEditor(gaussian.params[0], &panel);
  auto* radius = new ParamEditor(gaussian.params[1], &panel);
  layout->addWidget(sigma);
  layout->addWidget(radius);
  int edits = 0;
  QObject::connect(sigma, &ParamEditor::edited, [&] { ++edits; });
  panel.resize(400, 80);
  panel.show();
  panel.activateWindow();
  ASSERT_TRUE(QTest::qWaitForWindowActive(&panel));

  auto* slider = panel.findChild<QSlider*>("param.sigma.slider");
  auto* spin = panel.findChild<QDoubleSpinBox*>("param.sigma.spin");
  ASSERT_TRUE(slider && spin);
  spin->setValue(2.5);
  edits = 0;
  const int at = slider->value();
  QTest::mouseClick(slider, Qt::RightButton, Qt::NoModifier, QPoint(slider->width() - 5, slider->height() / 2));
  EXPECT_EQ(slider->value(), at) << "a right-click does not move the slider";
  EXPECT_TRUE(spin->hasFocus());
  auto* text = spin->findChild<QLineEdit*>();
  ASSERT_NE(text, nullptr);
  EXPECT_EQ(text->text(), "2.50");
  EXPECT_EQ(text->selectedText(), text->text());
  EXPECT_EQ(edits, 0);
  QTest::keyClicks(spin, "250");
  QTest::keyClick(spin, Qt::Key_Return);
  EXPECT_EQ(spin->value(), 250);
  EXPECT_GT(250, ParamEditor::soft_max(gaussian.params[0]));
  EXPECT_EQ(slider->value(), ParamEditor::kSliderSteps);
  EXPECT_EQ(edits, 1);
  FilterEntry e = default_entry(gaussian);
  sigma->write_to(e);
  EXPECT_EQ(e.numbers.at("sigma"), 250);

  // The integer radius, from the menu key (a context menu event without a click): "auto" selected, 400 typed.
  auto* radius_slider = panel.findChild<QSlider*>("param.radius.slider");
  auto* radius_spin = panel.findChild<QSpinBox*>("param.radius.spin");
  ASSERT_TRUE(radius_slider && radius_spin);
  QContextMenuEvent menu_key(QContextMenuEvent::Keyboard, radius_slider->rect().center(),
                             radius_slider->mapToGlobal(radius_slider->rect().center()));
  QApplication::sendEvent(radius_slider, &menu_key);
  EXPECT_TRUE(radius_spin->hasFocus());
  auto* radius_text = radius_spin->findChild<QLineEdit*>();
  EXPECT_EQ(radius_text->selectedText(), "auto");
  QTest::keyClicks(radius_spin, "400");
  QTest::keyClick(radius_spin, Qt::Key_Return);
  EXPECT_EQ(radius_spin->value(), 400);
  EXPECT_EQ(radius_slider->value(), ParamEditor::kSliderSteps);
  EXPECT_TRUE(radius_slider->toolTip().contains("right-click")) << radius_slider->toolTip().toStdString();
}

// A drag of 100 px stays in the soft range; every step but the last is abandoned, and the preview
// and the device panel show the chain the panel shows.
TEST_F(PhotographerTest, SliderDragAbandonsSupersededPreviews) {
  const QString path = write_image(dir, "photo.png", 900, 600);
  open(path);
  add_filter("gaussian");
  wait_for_preview();
  int full_passes = 0;
  QObject::connect(window->preview_engine(), &PreviewEngine::result_ready, [&](const PreviewResult& r) {
    if (r.pass == PreviewPass::Full) ++full_passes;
  });
  auto* slider = find<QSlider>("param.sigma.slider");
  ASSERT_NE(slider, nullptr);
  ASSERT_GT(slider->width(), 100);
  const double before = sigma();
  drag(slider, std::min(100, slider->width() / 2));
  const double after = sigma();
  EXPECT_GT(after, before);
  EXPECT_LE(after, ParamEditor::soft_max(find_filter("gaussian")->params[0]));
  // Right after the last move the panel names that chain, not a job it superseded.
  const FilterEntry shown = window->filter_panel()->settings().filters.at(0);
  EXPECT_TRUE(window->device_panel()->job_title().contains(entry_label(shown)))
      << window->device_panel()->job_title().toStdString();
  wait_for_preview();
  EXPECT_LE(full_passes, 3) << "20 slider events, each superseding the one before";
  const std::string spec = to_spec(shown);
  EXPECT_EQ(first_difference(window->image_view()->after_image(), core_output(path.toStdString(), {spec})), "");
  EXPECT_TRUE(window->device_panel()->job_title().contains(QString::fromStdString(spec)))
      << window->device_panel()->job_title().toStdString();
  EXPECT_TRUE(window->device_panel()->bound_text().startsWith("Bound by"))
      << window->device_panel()->bound_text().toStdString();
}

TEST(SaveAs, FormatFollowsTheTypedExtension) {
  ensure_gui_app();
  TempDir dir;
  SaveOptionsDialog dialog(QString::fromStdString(dir / "photo-filtered.jpg"), Format{PixelType::U8, 3});
  auto* path = dialog.findChild<QLineEdit*>("savePath");
  auto* format = dialog.findChild<QComboBox*>("saveFormat");
  auto* quality = dialog.findChild<QSpinBox*>("saveQuality");
  EXPECT_EQ(format->currentData().toString(), "jpg");
  EXPECT_TRUE(quality->isEnabled());
  // No number of its own: like the input unless chosen, as the CLI.
  EXPECT_EQ(quality->text(), "Same as input");
  EXPECT_EQ(dialog.findChild<QComboBox*>("saveSubsampling")->currentText(), "Same as input");
  EXPECT_EQ(dialog.jpeg().quality, 0);
  EXPECT_EQ(dialog.jpeg().subsampling, ChromaSubsampling::FromInput);
  path->setText(QString::fromStdString(dir / "out.png"));
  EXPECT_EQ(format->currentData().toString(), "png");
  EXPECT_FALSE(quality->isEnabled());
  EXPECT_EQ(dialog.path(), QString::fromStdString(dir / "out.png"));  // the name typed stays
  path->setText(QString::fromStdString(dir / "out.JPEG"));
  EXPECT_EQ(format->currentData().toString(), "jpg");
  format->setCurrentIndex(format->findData("png"));  // and the other way: the name follows the list
  EXPECT_EQ(dialog.path(), QString::fromStdString(dir / "out.png"));
}

TEST_F(PhotographerTest, ActionsNeedAnImage) {
  for (const char* name : {"actionSave", "actionSaveAs", "actionApply"})
    EXPECT_FALSE(find<QAction>(name)->isEnabled()) << name;
  EXPECT_FALSE(find<QPushButton>("applyButton")->isEnabled());
  EXPECT_TRUE(find<QAction>("actionOpen")->isEnabled());
  open(write_image(dir, "photo.png", 64, 48));
  for (const char* name : {"actionSave", "actionSaveAs", "actionApply"})
    EXPECT_TRUE(find<QAction>(name)->isEnabled()) << name;
  EXPECT_TRUE(find<QPushButton>("applyButton")->isEnabled());
}

// An error shown goes with the next success (here a save); the last folder saved to is remembered.
TEST_F(PhotographerTest, MessagesClearOnTheNextSuccess) {
  open(write_image(dir, "photo.png", 64, 48));
  bool failed = false;
  QObject::connect(window.get(), &MainWindow::load_failed, [&] { failed = true; });
  window->open_file(QString::fromStdString(dir / "missing.png"));
  ASSERT_TRUE(wait_for([&] { return failed; }));
  EXPECT_TRUE(window->message_bar()->isVisible());
  std::filesystem::create_directory(dir.path / "out");
  bool saved = false;
  QObject::connect(window.get(), &MainWindow::saved, [&] { saved = true; });
  window->save_to(QString::fromStdString(dir / "out/copy.png"), 0);
  ASSERT_TRUE(wait_for([&] { return saved; }));
  EXPECT_FALSE(window->message_bar()->isVisible()) << window->message_bar()->text().toStdString();
  EXPECT_EQ(QDir(window->save_folder()), QDir(QString::fromStdString(dir / "out")));
}

// The quit prompt names what would be lost, and only that.
TEST_F(PhotographerTest, QuitPromptSaysWhatWouldBeLost) {
  open(write_image(dir, "photo.png", 80, 60));
  EXPECT_EQ(window->unsaved_text(true), "");
  window->set_chain({{entry_from_spec("box:radius=2")}, {}});
  EXPECT_TRUE(window->unsaved_text(true).contains("box")) << window->unsaved_text(true).toStdString();
  EXPECT_TRUE(window->unsaved_text(true).contains("never applied"));
  EXPECT_EQ(window->unsaved_text(false), "");  // opening another file keeps the panel's chain
  bool applied = false;
  QObject::connect(window.get(), &MainWindow::applied, [&] { applied = true; });
  window->apply();
  ASSERT_TRUE(wait_for([&] { return applied; }));
  EXPECT_TRUE(window->unsaved_text(true).contains("1 applied filter step")) << window->unsaved_text(true).toStdString();
  EXPECT_FALSE(window->unsaved_text(true).contains("never applied"));  // Apply emptied the chain
  bool saved = false;
  QObject::connect(window.get(), &MainWindow::saved, [&] { saved = true; });
  window->save_to(QString::fromStdString(dir / "saved.png"), 0);
  ASSERT_TRUE(wait_for([&] { return saved && window->idle(); }));
  window->set_chain({{}, {}});
  EXPECT_EQ(window->unsaved_text(true), "");
  window->document()->undo_stack()->undo();  // back before the filters the file holds
  const QString text = window->unsaved_text(true);
  EXPECT_TRUE(text.contains("since undone")) << text.toStdString();
  EXPECT_FALSE(text.contains("applied filter step")) << text.toStdString();
}

TEST(WindowGeometry, KeptWithinTheScreen) {
  const QRect screen(0, 0, 1920, 1080);
  EXPECT_EQ(MainWindow::within_screen(QRect(100, 100, 1480, 920), screen), QRect(100, 100, 1480, 920));
  EXPECT_EQ(MainWindow::within_screen(QRect(100, 300, 1480, 920), screen), QRect(100, 160, 1480, 920));
  EXPECT_EQ(MainWindow::within_screen(QRect(-50, 20, 2500, 1400), screen), screen);
  EXPECT_EQ(MainWindow::within_screen(QRect(3000, 900, 800, 600), screen), QRect(1120, 480, 800, 600));
}

TEST(WindowGeometry, RestoredWhereItWas) {
  ensure_gui_app();
  QRect kept;
  {
    MainWindow first(MainWindowOptions{true, false});
    first.show();
    first.setGeometry(QRect(40, 30, 700, 500));  // within the offscreen screen (800x600)
    kept = first.geometry();
    first.close();
  }
  for (int start = 0; start < 2; ++start) {  // no drift from one start to the next
    MainWindow again(MainWindowOptions{true, false});
    again.show();
    EXPECT_EQ(again.geometry(), kept) << "start " << start;
    again.close();
  }
}

// One row per device or CPU worker of the job, a compact grid past 16, and the line naming the bound.
TEST(DevicePanelRows, EachWorkerItsRowAndTheBound) {
  ensure_gui_app();
  const Image src = make_test_image(640, 480, Format{PixelType::U8, 3}, 11);
  JobReport report;
  JobOptions opt;
  opt.schedule.tile = {128, 128};
  filter_image(src, parse_chain({"gaussian:sigma=3"}), select_devices("cpu:3").devices, opt, &report);
  DevicePanel panel;
  panel.show_job(job_view(report, "three workers", 3));
  const QStringList rows = panel.worker_rows()->rows();
  ASSERT_EQ(rows.size(), 3) << rows.join('\n').toStdString();
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(rows[i].startsWith(QStringLiteral("cpu%1 · ").arg(i))) << rows[i].toStdString();
  EXPECT_EQ(panel.worker_rows()->columns(), 1);
  EXPECT_TRUE(panel.bound_text().startsWith("Bound by")) << panel.bound_text().toStdString();

  filter_image(src, parse_chain({"box:radius=2"}), select_devices("cpu:20").devices, opt, &report);
  panel.show_job(job_view(report, "twenty workers", 3));
  EXPECT_EQ(panel.worker_rows()->rows().size(), 20);
  EXPECT_EQ(panel.worker_rows()->columns(), 4);
  panel.show_pending("next");
  EXPECT_EQ(panel.bound_text(), "");
  EXPECT_TRUE(panel.worker_rows()->rows().isEmpty());
}

// The bound from the records: what the CLI's report sums (decode and encode thread time, each
// device's stages), here laid out by hand so each case is plain.
TEST(DevicePanelRows, BoundNamesTheBusiestStage) {
  JobView job;
  job.device_names = {"cpu0"};
  job.wall_s = 1.0;
  auto rec = [](int device, int lane, StageKind stage, double t0, double t1) {
    StageRecord r;
    r.device = device;
    r.lane = lane;
    r.stage = stage;
    r.t0 = t0;
    r.t1 = t1;
    return r;
  };
  job.records = {rec(-1, 0, StageKind::Decode, 0, 0.6), rec(-1, 0, StageKind::Encode, 0.3, 0.95),
                 rec(0, 0, StageKind::Compute, 0.6, 0.65)};
  EXPECT_TRUE(bound_line(job).startsWith("Bound by decode/encode")) << bound_line(job).toStdString();
  job.records = {rec(0, 0, StageKind::Upload, 0, 0.7), rec(0, 0, StageKind::Kernel, 0.7, 0.9)};
  EXPECT_TRUE(bound_line(job).startsWith("Bound by upload")) << bound_line(job).toStdString();
  job.records = {rec(0, 0, StageKind::Upload, 0, 0.1), rec(0, 0, StageKind::Kernel, 0.1, 0.9)};
  EXPECT_TRUE(bound_line(job).startsWith("Bound by the kernel")) << bound_line(job).toStdString();
  job.records = {rec(0, 0, StageKind::Kernel, 0.1, 0.2)};
  EXPECT_TRUE(bound_line(job).startsWith("Bound by idle waiting")) << bound_line(job).toStdString();
  BatchReport batch;  // a batch whose threads waited for the memory budget: what the CLI's summary says
  batch.wall_s = 1.0;
  batch.memory_wait_s = 0.4;
  batch.max_inflight_bytes = 256u << 20;
  batch.records = job.records;
  batch.device_names = job.device_names;
  ASSERT_TRUE(batch.memory_bound());
  const QString memory = bound_line(job_view(batch, "batch"));
  EXPECT_TRUE(memory.startsWith("Bound by the memory budget")) << memory.toStdString();
  EXPECT_TRUE(memory.contains("256 MiB")) << memory.toStdString();
}

SpeedupPoint point(int count, double median_ms, double spread, double speedup) {
  SpeedupPoint p;
  p.device_count = count;
  p.ideal = count;
  p.median_s = median_ms / 1e3;
  p.spread = spread;
  p.runs = 30;
  p.speedup = speedup;
  for (int d = 0; d < count; ++d) {
    DeviceSummary s;
    s.device = d;
    s.compute_s = p.median_s * 0.9;
    s.busy_s = p.median_s * 0.9;
    s.idle_s = p.median_s * 0.1;
    p.split.push_back(s);
  }
  return p;
}

// The run: 1.00x on 2 workers with wide spreads. Too noisy to tell, and never "more help".
TEST(SpeedupAdvice, FollowsTheMeasuredRatio) {
  SpeedupResult noisy;
  noisy.points = {point(1, 31.94, 0.35, 1.0), point(2, 31.93, 0.25, 1.0)};
  classify_bound(noisy);
  EXPECT_TRUE(noisy.noisy);
  EXPECT_NE(noisy.explanation.find("too noisy"), std::string::npos) << noisy.explanation;
  SpeedupResult flat;
  flat.points = {point(1, 31.94, 0.03, 1.0), point(2, 31.93, 0.04, 1.0)};
  classify_bound(flat);
  EXPECT_FALSE(flat.noisy);
  EXPECT_NE(flat.explanation.find("do not help"), std::string::npos) << flat.explanation;
  EXPECT_EQ(flat.explanation.find("more devices help"), std::string::npos) << flat.explanation;
  SpeedupResult scales;
  scales.points = {point(1, 40, 0.02, 1.0), point(2, 21, 0.03, 1.9)};
  classify_bound(scales);
  EXPECT_NE(scales.explanation.find("more devices help"), std::string::npos) << scales.explanation;
}

// The demo's measurement runs each device count at least `repeats` times, and more, up to the most
// allowed, only while the middle half of its runs spreads 10% or more around their median.
TEST(SpeedupAdvice, MoreRunsOnlyWhileTheSpreadIsWide) {
  const Image src = make_test_image(256, 192, Format{PixelType::U8, 4}, 9, Pattern::Photo);
  const SpeedupResult r = measure_speedup(src, parse_chain({"gaussian:sigma=2"}), select_devices("cpu:2").devices, {},
                                          3, {}, nullptr, nullptr, 12);
  ASSERT_EQ(r.points.size(), 2u);
  for (const auto& p : r.points) {
    EXPECT_GE(p.runs, 3);
    EXPECT_LE(p.runs, 12);
    if (p.runs < 12) EXPECT_LT(p.spread, kSpeedupTargetSpread) << p.runs << " runs";
    EXPECT_LE(p.min_s, p.median_s);
    EXPECT_LE(p.median_s, p.max_s);
  }
  EXPECT_EQ(r.noisy, r.points[0].spread >= kSpeedupTargetSpread || r.points[1].spread >= kSpeedupTargetSpread);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The same job gives the same bytes from the GUI (Apply, Save; the batch dialog) as from the CLI: a
// JPEG made at quality 80, 4:2:2 — neither the CLI's nor the codec's default — stays quality 80, 4:2:2.
TEST_F(PhotographerTest, SameBytesAsTheCli) {
  const std::string in = dir / "in/photo.jpg";
  std::filesystem::create_directory(dir.path / "in");
  WriteOptions made;
  made.quality = 80;
  made.subsampling = ChromaSubsampling::S422;
  encode_file(in, make_test_image(320, 240, Format{PixelType::U8, 3}, 5, Pattern::Photo).view(), made);
  std::string out;
  ASSERT_EQ(run_cli(fmt::format("apply {} {} -f gaussian:sigma=1.5 --devices cpu:1 -q", in, dir / "cli.jpg"), &out), 0)
      << out;
  const ImageInfo cli = open_image(dir / "cli.jpg", {})->info();
  EXPECT_EQ(cli.jpeg.quality, 80);
  EXPECT_EQ(cli.jpeg.subsampling, ChromaSubsampling::S422);

  open(QString::fromStdString(in));
  window->set_chain({{entry_from_spec("gaussian:sigma=1.5")}, {}});
  bool applied = false, saved = false;
  QObject::connect(window.get(), &MainWindow::applied, [&] { applied = true; });
  QObject::connect(window.get(), &MainWindow::saved, [&] { saved = true; });
  window->apply();
  ASSERT_TRUE(wait_for([&] { return applied; }));
  window->save_to(QString::fromStdString(dir / "gui.jpg"));  // Save As's defaults: like the input
  ASSERT_TRUE(wait_for([&] { return saved && window->idle(); }));
  EXPECT_TRUE(file_bytes(dir / "gui.jpg") == file_bytes(dir / "cli.jpg")) << "Save As differs from tilefilter apply";

  window->set_devices("cpu:1");
  window->set_chain({{entry_from_spec("gaussian:sigma=1.5")}, {}});  // Apply emptied the panel's chain
  BatchDialog* batch = window->show_batch_dialog();
  batch->set_folders(QString::fromStdString(dir / "in"), QString::fromStdString(dir / "batch"));
  ASSERT_TRUE(start_and_wait(batch, &BatchDialog::batch_finished)) << batch->error_text().toStdString();
  ASSERT_EQ(
      run_cli(fmt::format("batch {} {} -f gaussian:sigma=1.5 --devices cpu:1 -q", dir / "in", dir / "cli-batch"), &out),
      0)
      << out;
  EXPECT_TRUE(file_bytes(dir / "batch/photo.jpg") == file_bytes(dir / "cli-batch/photo.jpg"))
      << "the batch dialog differs from tilefilter batch";
}

// The pictures in docs/screenshots, taken from the running window (with TF_GUI_SHOTS=DIR; under
// Xvfb: xvfb-run -a env QT_QPA_PLATFORM=xcb TF_GUI_SHOTS=docs/screenshots tests/tf_gui_tests
// --gtest_filter='Screenshots.*'): the main window with a chain, the device panel after a batch, the
// speedup demo.
TEST(Screenshots, MainWindowDevicesAfterABatchSpeedupDemo) {
  if (qEnvironmentVariableIsEmpty("TF_GUI_SHOTS")) GTEST_SKIP() << "set TF_GUI_SHOTS=DIR to take them";
  ensure_gui_app();
  TempDir dir;
  MainWindow window(MainWindowOptions{false, false});
  window.resize(1480, 920);
  window.show();
  bool loaded = false;
  QObject::connect(&window, &MainWindow::image_loaded, [&] { loaded = true; });
  window.open_file(QStringLiteral(TF_SOURCE_DIR "/resources/samples/harbour.jpg"));
  ASSERT_TRUE(wait_for([&] { return loaded; }));
  window.set_chain({{entry_from_spec("unsharp:sigma=2,amount=0.8"), entry_from_spec("gaussian:sigma=0.8")}, {}});
  ASSERT_TRUE(wait_for([&] { return window.idle() && window.current_full_result(); }, 120000));
  QTest::qWait(600);  // a few utilization samples
  save_shot(&window, "gui-cpu.png");

  std::filesystem::create_directory(dir.path / "in");
  for (int i = 0; i < 12; ++i) write_image(dir, "in/photo" + std::to_string(i) + ".jpg", 1600, 1200, 3, 40 + i);
  BatchDialog* batch = window.show_batch_dialog();
  batch->set_folders(QString::fromStdString(dir / "in"), QString::fromStdString(dir / "out"));
  ASSERT_TRUE(start_and_wait(batch, &BatchDialog::batch_finished, 300000)) << batch->error_text().toStdString();
  save_shot(batch, "batch-dialog-cpu.png");
  batch->close();
  QTest::qWait(600);
  save_shot(&window, "devices-after-batch-cpu.png");

  SpeedupDialog* speedup = window.show_speedup_dialog();
  speedup->set_image_size(2048, 2048);
  speedup->set_devices("cpu", 2);
  ASSERT_TRUE(start_and_wait(speedup, &SpeedupDialog::measured, 300000)) << speedup->error_text().toStdString();
  save_shot(speedup, "speedup-cpu.png");
}

}  // namespace
}  // namespace tf::gui
