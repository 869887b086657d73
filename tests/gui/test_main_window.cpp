// The real main window, offscreen: open an image, pick a filter, change a parameter, wait for the
// preview and check that the pixels shown are core's output; apply, undo, redo; errors in the window.
#include <QAction>
#include <QComboBox>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QLabel>
#include <QMimeData>
#include <QSlider>
#include <QSpinBox>
#include <QToolButton>
#include <QUrl>

#include "gui_test_support.hpp"
#include "main_window_fixture.hpp"
#include "panels/device_card.hpp"
#include "panels/device_panel.hpp"
#include "panels/filter_panel.hpp"
#include "panels/kernel_editor.hpp"
#include "panels/message_bar.hpp"
#include "panels/param_editor.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/io.hpp"
#include "views/image_view.hpp"
#include "views/stage_bars.hpp"
#include "views/timeline_view.hpp"
#include "views/utilization_graph.hpp"
#include "window/main_window.hpp"

namespace tf::gui {
namespace {

using namespace tf::test;

using MainWindowTest = MainWindowFixture;

TEST_F(MainWindowTest, ShowsCoreOutputAfterAParameterChange) {
  const QString path = write_image(dir, "photo.png", 320, 240);
  open(path);
  EXPECT_TRUE(window->windowTitle().contains("photo.png")) << window->windowTitle().toStdString();
  EXPECT_TRUE(window->windowTitle().contains(QStringLiteral("320×240 RGB u8"))) << window->windowTitle().toStdString();

  add_filter("gaussian");
  auto* sigma = find<QDoubleSpinBox>("param.sigma.spin");
  ASSERT_NE(sigma, nullptr);
  sigma->setValue(2.5);
  wait_for_preview();
  const std::vector<std::string> specs = {"gaussian:sigma=2.5"};
  EXPECT_EQ(to_specs(window->filter_panel()->settings().filters), specs);
  EXPECT_EQ(first_difference(window->image_view()->after_image(), core_output(path.toStdString(), specs)), "");

  // The slider drives the same parameter.
  auto* slider = find<QSlider>("param.sigma.slider");
  slider->setValue(ParamEditor::slider_position(find_filter("gaussian")->params[0], 1.0));
  wait_for_preview();
  const double sigma_now = window->filter_panel()->settings().filters[0].numbers.at("sigma");
  EXPECT_DOUBLE_EQ(sigma->value(), sigma_now);
  const std::string spec = to_spec(window->filter_panel()->settings().filters[0]);
  EXPECT_EQ(first_difference(window->image_view()->after_image(), core_output(path.toStdString(), {spec})), "") << spec;
}

TEST_F(MainWindowTest, LatestParameterWins) {
  const QString path = write_image(dir, "photo.png", 400, 300);
  open(path);
  add_filter("box");
  auto* radius = find<QSpinBox>("param.radius.spin");
  // A burst of changes without returning to the event loop: each cancels the one before.
  for (int r = 1; r <= 12; ++r) radius->setValue(r);
  wait_for_preview();
  EXPECT_EQ(first_difference(window->image_view()->after_image(), core_output(path.toStdString(), {"box:radius=12"})),
            "");
}

TEST_F(MainWindowTest, ChainOfFiltersWithBorderAndReorder) {
  const QString path = write_image(dir, "photo.png", 256, 192);
  open(path);
  add_filter("sharpen");
  add_filter("gaussian");
  find<QDoubleSpinBox>("param.sigma.spin")->setValue(1.5);
  auto* border = find<QComboBox>("borderMode");
  border->setCurrentIndex(border->findText("replicate"));
  wait_for_preview();
  EXPECT_EQ(first_difference(window->image_view()->after_image(),
                             core_output(path.toStdString(), {"sharpen", "gaussian"}, {BorderMode::Replicate, 0})),
            "");
  // Move the Gaussian up: it now runs first.
  find<QToolButton>("moveUp")->click();
  wait_for_preview();
  EXPECT_EQ(first_difference(window->image_view()->after_image(),
                             core_output(path.toStdString(), {"gaussian", "sharpen"}, {BorderMode::Replicate, 0})),
            "");
  find<QToolButton>("removeFilter")->click();  // removes the selected (Gaussian)
  wait_for_preview();
  EXPECT_EQ(first_difference(window->image_view()->after_image(),
                             core_output(path.toStdString(), {"sharpen"}, {BorderMode::Replicate, 0})),
            "");
}

TEST_F(MainWindowTest, CustomKernelFromTheGrid) {
  const QString path = write_image(dir, "photo.png", 200, 150);
  open(path);
  add_filter("custom");
  auto* editor = find<KernelEditor>("kernelEditor");
  ASSERT_TRUE(editor->isVisible());
  auto* width = find<QSpinBox>("kernelWidth");
  width->setValue(5);  // 3x3 box grows to 5 wide with zero columns
  wait_for_preview();
  const FilterEntry e = window->filter_panel()->settings().filters[0];
  EXPECT_EQ(e.kernel.width, 5);
  EXPECT_EQ(first_difference(window->image_view()->after_image(), core_output(path.toStdString(), {to_spec(e)})), "");
}

TEST_F(MainWindowTest, LargeImageShowsAProxyFirstThenFullResolution) {
  const QString path = write_image(dir, "large.png", 2048, 1200);  // 2.5 Mpix: above the proxy threshold
  open(path);
  std::vector<PreviewPass> passes;
  QObject::connect(window.get(), &MainWindow::preview_shown, [&](PreviewPass pass, double) { passes.push_back(pass); });
  add_filter("gaussian");
  wait_for_preview();
  ASSERT_GE(passes.size(), 2u);
  EXPECT_NE(passes.front(), PreviewPass::Full);
  EXPECT_EQ(passes.back(), PreviewPass::Full);
  EXPECT_EQ(first_difference(window->image_view()->after_image(), core_output(path.toStdString(), {"gaussian"})), "");
}

TEST_F(MainWindowTest, ApplyUndoRedo) {
  const QString path = write_image(dir, "photo.png", 160, 120);
  open(path);
  const Image original = decode_file(path.toStdString());
  add_filter("emboss");
  bool applied = false;
  QObject::connect(window.get(), &MainWindow::applied, [&] { applied = true; });
  window->apply();
  ASSERT_TRUE(wait_for([&] { return applied && window->idle(); }));
  const Image expected = core_output(path.toStdString(), {"emboss"});
  EXPECT_TRUE(same_pixels(window->document()->image().view(), expected.view()));
  EXPECT_TRUE(window->filter_panel()->settings().filters.empty());  // the chain was used up
  EXPECT_TRUE(window->isWindowModified());

  window->document()->undo_stack()->undo();
  EXPECT_TRUE(same_pixels(window->document()->image().view(), original.view()));
  ASSERT_EQ(window->filter_panel()->settings().filters.size(), 1u);  // and it is back
  EXPECT_EQ(window->filter_panel()->settings().filters[0].filter, "emboss");
  window->document()->undo_stack()->redo();
  EXPECT_TRUE(same_pixels(window->document()->image().view(), expected.view()));

  // Save writes the applied pixels.
  bool saved = false;
  QObject::connect(window.get(), &MainWindow::saved, [&] { saved = true; });
  const QString out = QString::fromStdString(dir / "out.png");
  window->save_to(out, 90);
  ASSERT_TRUE(wait_for([&] { return saved; })) << window->message_bar()->text().toStdString();
  EXPECT_TRUE(same_pixels(decode_file(out.toStdString()).view(), expected.view()));
  EXPECT_FALSE(window->isWindowModified());
}

TEST_F(MainWindowTest, SaveKeepsTheOpenedFilesMetadata) {
  if (!writer_streams("x.png")) GTEST_SKIP() << "needs libpng";
  Metadata md;
  md.orientation = 8;
  md.xmp = "<x:xmpmeta xmlns:x='adobe:ns:meta/'/>";
  const QString path = QString::fromStdString(dir / "tagged.png");
  encode_file(path.toStdString(), test::random_image(90, 60, Format{PixelType::U8, 3}, 5).view(), {}, md);
  open(path);
  add_filter("sharpen");
  bool applied = false, saved = false;
  QObject::connect(window.get(), &MainWindow::applied, [&] { applied = true; });
  QObject::connect(window.get(), &MainWindow::saved, [&] { saved = true; });
  window->apply();
  ASSERT_TRUE(wait_for([&] { return applied && window->idle(); }));
  const QString out = QString::fromStdString(dir / "saved.png");
  window->save_to(out, 90);
  ASSERT_TRUE(wait_for([&] { return saved; })) << window->message_bar()->text().toStdString();
  const ImageInfo info = open_image(out.toStdString())->info();
  EXPECT_EQ(info.metadata.orientation, 8);
  EXPECT_EQ(info.metadata.xmp, md.xmp);
}

TEST_F(MainWindowTest, DevicePanelAndTimelineShowTheLastJob) {
  const QString path = write_image(dir, "photo.png", 700, 500);
  open(path);
  window->set_devices("cpu:2");
  add_filter("box");
  wait_for_preview();
  DeviceCard* cpu = window->device_panel()->card("cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_TRUE(cpu->job_text().contains("tiles")) << cpu->job_text().toStdString();
  ASSERT_FALSE(cpu->bars()->bars().empty());
  EXPECT_GT(cpu->bars()->bars()[0].seconds, 0);
  const JobView& job = window->timeline()->job();
  EXPECT_FALSE(job.records.empty());
  EXPECT_EQ(window->timeline()->lanes().size(), 2u);  // one lane per CPU worker
  EXPECT_TRUE(window->timeline()->describe(job.records.front()).contains("tile"));
  // The live graph keeps sampling while idle.
  const int before = cpu->graph()->samples();
  ASSERT_TRUE(wait_for([&] { return cpu->graph()->samples() > before + 1; }, 3000));
}

TEST_F(MainWindowTest, UnreadableFilesAreMessagesNotCrashes) {
  const std::string text = dir / "notes.png";
  FILE* f = std::fopen(text.c_str(), "w");
  std::fputs("this is not a PNG", f);
  std::fclose(f);
  bool failed = false;
  QObject::connect(window.get(), &MainWindow::load_failed, [&] { failed = true; });
  window->open_file(QString::fromStdString(text));
  ASSERT_TRUE(wait_for([&] { return failed; }));
  EXPECT_TRUE(window->message_bar()->text().contains("notes.png")) << window->message_bar()->text().toStdString();
  save_shot(window.get(), "error-message.png");
  failed = false;
  window->open_file(QString::fromStdString(dir / "missing.jpg"));
  ASSERT_TRUE(wait_for([&] { return failed; }));
  EXPECT_EQ(window->message_bar()->level(), MessageBar::Level::Error);
  // A device selection that cannot be had is a message too, and the window keeps working.
  const QString path = write_image(dir, "photo.png", 64, 48);
  open(path);
  add_filter("box");
  window->set_devices("7");  // no GPU 7 here
  ASSERT_TRUE(wait_for([&] { return window->idle(); }));
  EXPECT_TRUE(window->message_bar()->text().contains("GPU")) << window->message_bar()->text().toStdString();
  window->set_devices("cpu");
  wait_for_preview();
}

TEST_F(MainWindowTest, ZoomAndCompareModes) {
  const QString path = write_image(dir, "photo.png", 640, 480);
  open(path);
  ImageView* view = window->image_view();
  EXPECT_TRUE(view->fitting());
  view->zoom_actual();
  EXPECT_NEAR(view->device_zoom(), 1.0, 1e-9);
  EXPECT_LE(view->visible_image_rect().width(), 640);
  view->zoom_in();
  EXPECT_GT(view->zoom(), 1.0);
  view->zoom_fit();
  EXPECT_EQ(view->visible_image_rect(), QRect(0, 0, 640, 480));
  view->set_compare(ImageView::Compare::Before);
  view->set_split(0.25);
  EXPECT_DOUBLE_EQ(view->split(), 0.25);
  const QPixmap shot = window->grab();
  EXPECT_FALSE(shot.isNull());
}

}  // namespace
}  // namespace tf::gui

namespace tf::gui {
namespace {

TEST(MainWindowDrop, DroppedFilesOpen) {
  tf::test::ensure_gui_app();
  tf::test::TempDir dir;
  const QString path = tf::test::write_image(dir, "dropped.png", 120, 90);
  MainWindow window(MainWindowOptions{false, false});
  window.show();
  bool loaded = false;
  QObject::connect(&window, &MainWindow::image_loaded, [&] { loaded = true; });
  QMimeData data;
  data.setUrls({QUrl::fromLocalFile(path)});
  const QPoint at = window.image_view()->mapTo(&window, window.image_view()->rect().center());
  QDragEnterEvent enter(at, Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&window, &enter);
  EXPECT_TRUE(enter.isAccepted());
  QDropEvent drop(at, Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&window, &drop);
  ASSERT_TRUE(tf::test::wait_for([&] { return loaded; }));
  EXPECT_EQ(window.document()->display_name(), "dropped.png");
  // A dropped preset loads the chain.
  QMimeData preset;
  preset.setUrls({QUrl::fromLocalFile(QStringLiteral(TF_SOURCE_DIR "/resources/presets/edges.json"))});
  QDragEnterEvent enter_preset(at, Qt::CopyAction, &preset, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&window, &enter_preset);
  QDropEvent drop_preset(at, Qt::CopyAction, &preset, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&window, &drop_preset);
  EXPECT_EQ(to_specs(window.filter_panel()->settings().filters),
            (std::vector<std::string>{"gaussian:sigma=1.2", "sobel"}))
      << window.message_bar()->text().toStdString();
}

}  // namespace
}  // namespace tf::gui
