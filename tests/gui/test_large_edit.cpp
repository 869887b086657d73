// Editing a large document in the real main window: the zoomed-in live preview (the visible region
// read at full resolution with the chain's halo, filtered on the devices, the same bits as the whole
// file filtered there), Apply streamed into a file of the document with Undo and Redo switching
// files, and the memory budget the device panel shows.
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QStatusBar>
#include <cstring>
#include <random>

#include "gui_test_support.hpp"
#include "main_window_fixture.hpp"
#include "panels/device_panel.hpp"
#include "panels/filter_panel.hpp"
#include "panels/message_bar.hpp"
#include "platform/proc_stats.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/stream.hpp"
#include "views/image_view.hpp"
#include "window/main_window.hpp"

namespace tf::gui {
namespace {

using namespace tf::test;

Image random_image(int width, int height, std::uint32_t seed) {
  Image image(width, height, Format{PixelType::U8, 3});
  std::mt19937 rng(seed);
  for (int y = 0; y < height; ++y) {
    auto* row = image.view().row_as<std::uint8_t>(y);
    for (int x = 0; x < width * 3; ++x) row[x] = static_cast<std::uint8_t>(rng() >> 24);
  }
  return image;
}

Image crop(const Image& src, const Rect& r) {
  Image out(r.width, r.height, src.format());
  for (int y = 0; y < r.height; ++y)
    std::memcpy(out.view().row(y), src.view().sub(r).row(y), src.view().sub(r).row_bytes());
  return out;
}

bool same_pixels(const Image& a, const Image& b) {
  if (a.width() != b.width() || a.height() != b.height() || a.format().pixel_bytes() != b.format().pixel_bytes())
    return false;
  for (int y = 0; y < a.height(); ++y)
    if (std::memcmp(a.view().row(y), b.view().row(y), a.view().row_bytes()) != 0) return false;
  return true;
}

class LargeEditTest : public MainWindowFixture {
 protected:
  // Opens `path` as a large document, whatever its size.
  void open_large(const std::string& path) {
    const std::size_t saved_limit = large_image_bytes();
    set_large_image_bytes(1);
    open(QString::fromStdString(path), 120000);
    set_large_image_bytes(saved_limit);
    ASSERT_NE(window->document()->large(), nullptr);
  }
  // The file's pixels under the view's filtered region (after_detail_rect is in overview pixels).
  Rect after_detail_in_file() const {
    const QRectF r = window->image_view()->after_detail_rect();
    const int f = window->document()->large()->factor;
    return {static_cast<int>(std::lround(r.x() * f)), static_cast<int>(std::lround(r.y() * f)),
            static_cast<int>(std::lround(r.width() * f)), static_cast<int>(std::lround(r.height() * f))};
  }
  bool region_shown() const { return !window->image_view()->after_detail_image().isNull() && window->idle(); }
};

TEST_F(LargeEditTest, ZoomedInPreviewIsTheFilteredFileAtFullResolution) {
  const std::string path = dir / "noise.tif";
  const Image image = random_image(5000, 300, 21);  // overview at 1/2
  WriteOptions tiled;
  tiled.tiff_tile = {64, 64};
  encode_file(path, image.view(), tiled);
  open_large(path);
  ASSERT_EQ(window->document()->large()->factor, 2);
  const std::vector<std::string> specs{"gaussian:sigma=2", "unsharp:sigma=1.5,amount=1"};
  window->set_chain({{entry_from_spec(specs[0]), entry_from_spec(specs[1])}, {}});
  ImageView* view = window->image_view();
  ASSERT_TRUE(wait_for([&] { return window->idle(); }));
  EXPECT_TRUE(view->after_detail_image().isNull()) << "fitted: the overview alone";

  // Zoomed in at the middle: the region arrives, equal to the whole file filtered, cropped there.
  view->set_zoom(4, QPointF(view->width() / 2.0, view->height() / 2.0));
  ASSERT_TRUE(wait_for([&] { return region_shown(); }, 60000)) << window->message_bar()->text().toStdString();
  const Image expected = core_output(path, specs);
  Rect r = after_detail_in_file();
  EXPECT_GT(r.x, 0);
  EXPECT_EQ(first_difference(view->after_detail_image(), crop(expected, r)), "");
  EXPECT_EQ(first_difference(view->detail_image(), crop(image, r)), "") << "the before side: the file as it is";
  save_shot(window.get(), "large_region_preview");

  // At the left edge (the border is synthesized from the image edge, as in the whole job).
  view->zoom_fit();
  view->set_zoom(8, view->to_widget(QPointF(1, 75)));
  ASSERT_TRUE(wait_for([&] { return region_shown() && after_detail_in_file().x == 0; }, 60000));
  r = after_detail_in_file();
  EXPECT_EQ(first_difference(view->after_detail_image(), crop(expected, r)), "");

  // A new parameter: the old region goes at once (the filtered overview shows meanwhile), the new
  // one comes for the same place.
  const std::vector<std::string> sharper{"gaussian:sigma=3"};
  window->set_chain({{entry_from_spec(sharper[0])}, {}});
  EXPECT_TRUE(view->after_detail_image().isNull());
  ASSERT_TRUE(wait_for([&] { return region_shown(); }, 60000));
  r = after_detail_in_file();
  EXPECT_EQ(first_difference(view->after_detail_image(), crop(core_output(path, sharper), r)), "");
}

TEST_F(LargeEditTest, PngIsReadDownToTheRegionWithinTheLimit) {
  const std::string path = dir / "noise.png";
  encode_file(path, random_image(300, 5000, 8).view(), {});  // decodes from the top; overview at 1/2
  open_large(path);
  const std::vector<std::string> specs{"box:radius=3"};
  window->set_chain({{entry_from_spec(specs[0])}, {}});
  ImageView* view = window->image_view();
  ASSERT_TRUE(wait_for([&] { return window->idle(); }));
  view->set_zoom(4, view->to_widget(QPointF(75, 2499)));  // the bottom rows of the file
  ASSERT_TRUE(wait_for([&] { return region_shown(); }, 60000)) << window->message_bar()->text().toStdString();
  const Rect r = after_detail_in_file();
  EXPECT_GT(r.y, 4000);
  EXPECT_EQ(first_difference(view->after_detail_image(), crop(core_output(path, specs), r)), "");

  // Past the limit (rows through the region over large_image_bytes) the overview stays.
  const std::size_t saved_limit = large_image_bytes();
  set_large_image_bytes(300 * 3 * 1000);
  window->set_chain({{entry_from_spec("box:radius=2")}, {}});
  EXPECT_TRUE(view->after_detail_image().isNull());
  ASSERT_TRUE(wait_for([&] { return window->idle(); }));
  set_large_image_bytes(saved_limit);
  EXPECT_TRUE(view->after_detail_image().isNull());
  EXPECT_TRUE(window->statusBar()->currentMessage().contains("decodes from the top"))
      << window->statusBar()->currentMessage().toStdString();
}

TEST_F(LargeEditTest, ApplyStreamsIntoAFileThatUndoAndRedoSwitchTo) {
  const QString original = write_image(dir, "photo.png", 700, 500);
  open_large(original.toStdString());
  ImageDocument* doc = window->document();
  const std::vector<std::string> specs{"gaussian:sigma=2"};
  window->set_chain({{entry_from_spec(specs[0])}, {}});
  bool applied = false;
  QObject::connect(window.get(), &MainWindow::applied, [&] { applied = true; });
  window->apply();
  ASSERT_TRUE(wait_for([&] { return applied && window->idle(); }, 60000))
      << window->message_bar()->text().toStdString();
  const LargeSource* result = doc->state().large.get();  // not held: the document decides its life
  ASSERT_NE(result, nullptr);
  const std::string result_path = result->path;
  EXPECT_NE(result_path, original.toStdString());
  EXPECT_TRUE(same_pixels(decode_file(result_path), core_output(original.toStdString(), specs)));
  EXPECT_TRUE(window->filter_panel()->settings().filters.empty()) << "the chain was used up";
  EXPECT_TRUE(doc->modified());
  // The streamed job on the device panel and the timeline, with its time split.
  const QString job = window->findChild<QLabel*>("panelJobTitle")->text();
  EXPECT_TRUE(job.startsWith("Apply of photo.png") && job.contains("decode")) << job.toStdString();

  // Undo and Redo switch files; nothing is filtered again.
  doc->undo_stack()->undo();
  EXPECT_EQ(doc->state().large->path, original.toStdString());
  EXPECT_EQ(window->filter_panel()->settings().filters.size(), 1u);
  EXPECT_TRUE(QFileInfo::exists(QString::fromStdString(result_path))) << "Redo still needs it";
  doc->undo_stack()->redo();
  EXPECT_EQ(doc->state().large.get(), result);
  ASSERT_TRUE(wait_for([&] { return window->idle(); }));

  // Save As writes the current state; the original and the result are refused as targets.
  QString saved;
  QObject::connect(window.get(), &MainWindow::saved, [&](const QString& p) { saved = p; });
  window->save_to(original, 92);
  EXPECT_TRUE(window->message_bar()->text().contains("another file"));
  const QString out = QString::fromStdString(dir / "out.tif");
  window->save_to(out, 92);
  ASSERT_TRUE(wait_for([&] { return !saved.isEmpty() && window->idle(); }, 60000));
  EXPECT_TRUE(same_pixels(decode_file(out.toStdString()), decode_file(result_path)));

  // A cancelled Apply leaves the document as it was.
  window->set_chain({{entry_from_spec("box:radius=2")}, {}});
  const int steps = doc->undo_stack()->count();
  window->apply();
  window->findChild<QPushButton*>("cancelSave")->click();
  ASSERT_TRUE(wait_for([&] { return window->idle(); }, 60000));
  EXPECT_TRUE(window->message_bar()->text().contains("cancelled")) << window->message_bar()->text().toStdString();
  EXPECT_EQ(doc->undo_stack()->count(), steps);
  EXPECT_EQ(doc->state().large.get(), result);

  // Undo, then another Apply: the redo branch (the first result) is dropped and its file removed.
  doc->undo_stack()->undo();
  window->set_chain({{entry_from_spec("box:radius=1")}, {}});
  applied = false;
  window->apply();
  ASSERT_TRUE(wait_for([&] { return applied && window->idle(); }, 60000));
  const QString folder = QFileInfo(QString::fromStdString(doc->state().large->path)).absolutePath();
  EXPECT_FALSE(QFileInfo::exists(QString::fromStdString(result_path))) << "the dropped step's file remains";
  EXPECT_TRUE(QFileInfo::exists(QString::fromStdString(doc->state().large->path)));

  // Closing the document removes the folder with every file in it.
  window.reset();
  EXPECT_FALSE(QDir(folder).exists()) << folder.toStdString();
}

TEST_F(LargeEditTest, DevicePanelShowsTheStreamingBudgetAndTheProcessMemory) {
  const QString text = window->device_panel()->memory_text();
  const auto mib = [](std::size_t bytes) { return (bytes + (1 << 19)) >> 20; };
  EXPECT_TRUE(text.contains(QStringLiteral("Memory budget for large images: %1 MiB (bands streamed within %2 MiB")
                                .arg(mib(large_document_budget()))
                                .arg(mib(default_stream_budget()))))
      << text.toStdString();
  EXPECT_TRUE(text.contains(QStringLiteral("resident"))) << text.toStdString();
  EXPECT_TRUE(text.contains(QStringLiteral("peak"))) << text.toStdString();
  const auto m = QRegularExpression("(\\d+) MiB resident, (\\d+) MiB peak").match(text);
  ASSERT_TRUE(m.hasMatch()) << text.toStdString();
  EXPECT_GT(m.captured(1).toLongLong(), 0);
  EXPECT_GE(m.captured(2).toLongLong(), m.captured(1).toLongLong());
}

// A large document keeps only the undo steps whose overviews fit in the memory budget; the peak
// the panel reports stays under the budget it shows.
TEST_F(LargeEditTest, UndoStepsOfALargeDocumentFitTheMemoryBudget) {
  const std::size_t mib = 1 << 20;
  EXPECT_EQ(large_undo_steps(8 * mib), 20);   // small overviews: the usual 20 steps
  EXPECT_EQ(large_undo_steps(200 * mib), 1);  // 4096² RGBA16-sized ones: one step
  EXPECT_EQ(large_undo_steps(100 * mib),
            static_cast<int>((large_document_budget() - default_stream_budget() - kProcessAllowance - 200 * mib) /
                             (100 * mib)));
  const std::string path = dir / "steps.tif";
  encode_file(path, random_image(3000, 200, 5).view());
  open_large(path);
  const DocumentState& state = window->document()->state();
  EXPECT_GT(state_bytes(state), static_cast<std::size_t>(state.image.width()) * state.image.height() * 3);
  EXPECT_EQ(window->document()->undo_stack()->undoLimit(), large_undo_steps(state_bytes(state)));
  EXPECT_LT(process_peak_resident_bytes(), large_document_budget());
}

}  // namespace
}  // namespace tf::gui
