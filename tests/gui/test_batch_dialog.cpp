// The batch dialog on a temporary folder: the same core batch job as the CLI, driven from the dialog.
#include <sys/wait.h>
#include <unistd.h>

#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QTest>
#include <QThread>
#include <algorithm>

#include <fmt/format.h>

#include "dialogs/batch_dialog.hpp"
#include "gui_test_support.hpp"
#include "panels/filter_panel.hpp"
#include "platform/device_hub.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/gpu_jpeg.hpp"
#include "window/main_window.hpp"

namespace tf::gui {
namespace {

using namespace tf::test;

class BatchDialogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ensure_gui_app();
    window = std::make_unique<MainWindow>(MainWindowOptions{false, false});
    window->show();
    std::filesystem::create_directories(dir.path / "in");
    in = QString::fromStdString(dir / "in");
    out = QString::fromStdString(dir / "out");
  }

  // Runs the dialog's job; false when it could not run (the reason is in the dialog).
  bool run(BatchDialog* dialog) { return start_and_wait(dialog, &BatchDialog::batch_finished); }

  // Sixteen 640x480 images through a sigma-6 blur on one CPU worker, started: long enough to watch
  // the dialog while it runs. `done` turns true when the batch finishes.
  BatchDialog* start_slow_batch(bool& done) {
    for (int i = 0; i < 16; ++i) write_image(dir, "in/img" + std::to_string(i) + ".png", 640, 480, 3, i);
    window->set_chain({{entry_from_spec("gaussian:sigma=6")}, {}});
    window->set_devices("cpu:1");
    BatchDialog* dialog = window->show_batch_dialog();
    dialog->set_folders(in, out);
    QObject::connect(dialog, &BatchDialog::batch_finished, [&done](bool) { done = true; });
    dialog->start();
    return dialog;
  }

  TempDir dir;
  QString in, out;
  std::unique_ptr<MainWindow> window;
};

TEST_F(BatchDialogTest, FiltersAFolderLikeTheCoreAndListsFailures) {
  for (int i = 0; i < 3; ++i) write_image(dir, "in/img" + std::to_string(i) + ".png", 96 + 16 * i, 64, 3, 10 + i);
  FILE* f = std::fopen((dir / "in/broken.png").c_str(), "w");
  std::fputs("not an image at all", f);
  std::fclose(f);

  // The dialog takes the panel's chain and devices.
  window->set_chain({{entry_from_spec("gaussian:sigma=1.2")}, {}});
  window->set_devices("cpu:2");
  BatchDialog* dialog = window->show_batch_dialog();
  ASSERT_NE(dialog, nullptr);
  dialog->set_folders(in, out);
  dialog->set_format("png", 90);
  EXPECT_EQ(dialog->options().filters, std::vector<std::string>{"gaussian:sigma=1.2"});
  EXPECT_EQ(dialog->options().devices, "cpu:2");

  if (!run(dialog)) {
    if (dialog->error_text().contains("not implemented")) GTEST_SKIP() << "run_batch is not implemented in this build";
    FAIL() << "the batch did not run: " << dialog->error_text().toStdString();
  }
  for (int i = 0; i < 3; ++i) {
    const std::string name = "img" + std::to_string(i) + ".png";
    ASSERT_TRUE(QFileInfo::exists(out + "/" + QString::fromStdString(name))) << name;
    const Image expected = core_output(dir / ("in/" + name), {"gaussian:sigma=1.2"});
    EXPECT_TRUE(same_pixels(decode_file(dir / ("out/" + name)).view(), expected.view())) << name;
  }
  const QStringList failed = dialog->failed_files();
  ASSERT_EQ(failed.size(), 1) << failed.join('\n').toStdString();
  EXPECT_TRUE(failed[0].contains("broken.png"));
  EXPECT_EQ(dialog->progress_value(), dialog->progress_maximum());
  EXPECT_TRUE(dialog->summary_text().contains("4 files")) << dialog->summary_text().toStdString();
  save_shot(dialog, "batch-dialog.png");
}

// The report's notes show in the dialog as the CLI prints them: here a temporary file that an
// interrupted run left in the output folder, removed before the batch.
TEST_F(BatchDialogTest, ShowsTheReportsNotes) {
  write_image(dir, "in/a.png", 64, 48, 3, 5);
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  write_bytes(dir / fmt::format("out/.a.png.tf-{}-0.tmp", gone), {1, 2, 3});
  window->set_chain({{entry_from_spec("gaussian:sigma=1.2")}, {}});
  window->set_devices("cpu:1");
  BatchDialog* dialog = window->show_batch_dialog();
  dialog->set_folders(in, out);
  ASSERT_TRUE(run(dialog)) << dialog->error_text().toStdString();
  EXPECT_TRUE(dialog->error_text().contains("temporary file left by an interrupted run"))
      << dialog->error_text().toStdString();
  EXPECT_TRUE(dialog->failed_files().isEmpty());
  save_shot(dialog, "batch-dialog-note.png");
}

TEST_F(BatchDialogTest, ProblemsWithTheJobAreShownInTheDialog) {
  BatchDialog* dialog = window->show_batch_dialog();
  dialog->set_folders(QString::fromStdString(dir / "no-such-folder"), out);
  window->set_chain({{entry_from_spec("box")}, {}});
  dialog = window->show_batch_dialog();  // takes the chain again
  EXPECT_FALSE(run(dialog));
  EXPECT_FALSE(dialog->error_text().isEmpty());
  EXPECT_FALSE(dialog->running());

  dialog->set_folders(QString(), out);  // no input folder: refused before anything starts
  EXPECT_FALSE(run(dialog));
  EXPECT_TRUE(dialog->error_text().contains("input folder")) << dialog->error_text().toStdString();
}

// Before Start the dialog counts what the folder holds: "0 of 16 files", not "0 of 1".
TEST_F(BatchDialogTest, CountsTheFolderBeforeStart) {
  for (int i = 0; i < 16; ++i) write_image(dir, "in/img" + std::to_string(i) + ".png", 24, 16, 3, i);
  std::fclose(std::fopen((dir / "in/notes.txt").c_str(), "w"));
  BatchDialog* dialog = window->show_batch_dialog();
  dialog->set_folders(in, out);
  EXPECT_EQ(dialog->progress_text(), "0 of 16 files");
  EXPECT_TRUE(dialog->status_text().contains("16 images to filter")) << dialog->status_text().toStdString();
  EXPECT_TRUE(dialog->status_text().contains("1 other file skipped")) << dialog->status_text().toStdString();
  save_shot(dialog, "batch-dialog-before-start.png");
  dialog->set_folders(QString::fromStdString(dir / "no-such-folder"), out);
  EXPECT_EQ(dialog->progress_text(), "no files");
  EXPECT_TRUE(dialog->status_text().contains("no such folder")) << dialog->status_text().toStdString();
}

// The JPEG codec choice (--codec): only the codecs present. With a GPU codec in the build and a GPU,
// automatic (the default), CPU and GPU; else the CPU's alone, with a tooltip saying why, and a
// remembered "gpu" or "auto" becomes the CPU.
TEST_F(BatchDialogTest, JpegCodecChoiceFollowsTheBuild) {
  window->set_chain({{entry_from_spec("box")}, {}});
  window->set_devices("cpu:1");
  BatchDialog* dialog = window->show_batch_dialog();
  auto* codec = dialog->findChild<QComboBox*>("batchCodec");
  ASSERT_NE(codec, nullptr);
  ASSERT_TRUE(wait_for([] { return DeviceHub::instance().gpus_ready(); }));
  QCoreApplication::processEvents();  // the list follows discovery (queued)
  const bool gpu = have_gpu_jpeg() && !DeviceHub::instance().gpus().empty();
  EXPECT_EQ(dialog->codec_choices(), gpu ? QStringList({"auto", "cpu", "gpu"}) : QStringList({"cpu"}));
  EXPECT_EQ(codec->currentData().toString(), gpu ? "auto" : "cpu");
  dialog->set_codec("gpu");
  EXPECT_EQ(codec->currentData().toString(), gpu ? "gpu" : "cpu");
  if (!gpu) EXPECT_TRUE(codec->toolTip().contains("CPU")) << codec->toolTip().toStdString();
  dialog->set_codec("cpu");
  dialog->set_folders(in, out);
  write_image(dir, "in/a.jpg", 64, 48, 3, 1);
  EXPECT_TRUE(run(dialog)) << dialog->error_text().toStdString();
  EXPECT_TRUE(QFileInfo::exists(out + "/a.jpg"));
}

// During a run: "now:" names only the files a thread works on, and a rate and the time left show.
TEST_F(BatchDialogTest, ShowsFilesInFlightRateAndTimeLeftWhileRunning) {
  bool done = false;
  BatchDialog* dialog = start_slow_batch(done);
  QStringList seen;
  for (int i = 0; i < 12000 && !done; ++i) {
    QTest::qWait(5);
    if (seen.isEmpty() || seen.last() != dialog->status_text()) {
      seen << dialog->status_text();
      if (seen.last().contains(" left") && seen.filter(" left").size() == 1)
        save_shot(dialog, "batch-dialog-running.png");
    }
  }
  ASSERT_TRUE(done);
  // Decode threads (one a core), one filter worker and encode threads (one a core): never all 16.
  const int most = 2 * std::max(1, QThread::idealThreadCount()) + 1;
  bool named = false, rate = false, left = false;
  for (const QString& text : seen) {
    const qsizetype now = text.indexOf("now: ");
    if (now >= 0) {
      named = true;
      EXPECT_LE(text.mid(now).count(".png"), std::min(most, 15)) << text.toStdString();
    }
    rate = rate || text.contains("files/s");
    left = left || text.contains(" left");
  }
  EXPECT_TRUE(named) << seen.join('\n').toStdString();
  EXPECT_TRUE(rate) << seen.join('\n').toStdString();
  EXPECT_TRUE(left) << seen.join('\n').toStdString();
}

// Cancel: the dialog says how many started files still finish, then that the batch was cancelled.
TEST_F(BatchDialogTest, CancelSaysWhatStillFinishes) {
  bool done = false;
  BatchDialog* dialog = start_slow_batch(done);
  ASSERT_TRUE(wait_for([&] { return done || dialog->status_text().contains(" done, "); }, 60000));
  dialog->cancel();
  QStringList seen;
  for (int i = 0; i < 12000 && !done; ++i) {
    QTest::qWait(5);
    if (seen.isEmpty() || seen.last() != dialog->status_text()) seen << dialog->status_text();
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(dialog->status_text(), "Cancelled");
  qsizetype first = 0;
  while (first < seen.size() && !seen[first].contains("in flight finish")) ++first;
  ASSERT_LT(first, seen.size()) << seen.join('\n').toStdString();
  for (qsizetype i = first; i < seen.size(); ++i)  // no time left promised once cancelling
    EXPECT_FALSE(seen[i].contains(" left")) << seen[i].toStdString();
  EXPECT_LT(QDir(out).entryList({"*.png"}, QDir::Files).size(), 16);
}

// Skipped files: the name in the file column, a reason a person reads in the problem column.
TEST_F(BatchDialogTest, SkippedFilesShowTheirNameAndAReason) {
  write_image(dir, "in/a.png", 24, 16);
  std::fclose(std::fopen((dir / "in/notes.txt").c_str(), "w"));
  window->set_chain({{entry_from_spec("box")}, {}});
  window->set_devices("cpu:1");
  BatchDialog* dialog = window->show_batch_dialog();
  dialog->set_folders(in, out);
  ASSERT_TRUE(run(dialog)) << dialog->error_text().toStdString();
  EXPECT_EQ(dialog->failed_files(), QStringList{"notes.txt: Skipped: Not an image"});
}

// The dialog starts from the panel's chain and border, each time it is shown.
TEST_F(BatchDialogTest, StartsFromTheCurrentChainAndBorder) {
  window->set_chain(
      {{entry_from_spec("gaussian:sigma=2"), entry_from_spec("sharpen:amount=0.5")}, {BorderMode::Replicate, 0}});
  BatchDialog* dialog = window->show_batch_dialog();
  dialog->set_folders(in, out);
  const std::vector<std::string> specs = {"gaussian:sigma=2", "sharpen:amount=0.5"};
  EXPECT_EQ(dialog->options().filters, specs);
  EXPECT_EQ(dialog->options().job.border.mode, BorderMode::Replicate);
  EXPECT_EQ(dialog->findChild<QComboBox*>("batchBorder")->currentText(), "replicate");
  dialog->close();
  window->set_chain({{entry_from_spec("box:radius=3")}, {BorderMode::Constant, 200}});
  dialog = window->show_batch_dialog();
  EXPECT_EQ(dialog->options().filters, std::vector<std::string>{"box:radius=3"});
  EXPECT_EQ(dialog->options().job.border.mode, BorderMode::Constant);
  EXPECT_EQ(dialog->options().job.border.value, 200);
}

// No number of its own: a fresh dialog has `tilefilter batch`'s defaults.
TEST_F(BatchDialogTest, DefaultsAreTheCli) {
  BatchDialog* dialog = window->show_batch_dialog();
  dialog->set_folders(in, out);
  window->set_chain({{entry_from_spec("box")}, {}});
  const BatchOptions cli;
  const BatchOptions gui = window->show_batch_dialog()->options();
  EXPECT_EQ(gui.quality, cli.quality);  // 0: each JPEG's own
  EXPECT_EQ(gui.subsampling, cli.subsampling);
  EXPECT_EQ(gui.format, cli.format);
  EXPECT_EQ(gui.recursive, cli.recursive);
  EXPECT_EQ(gui.job.border.mode, cli.job.border.mode);
  EXPECT_EQ(gui.resume, cli.resume);
}

// A second run into the same folder asks first: cancel leaves the outputs alone, resume keeps the
// complete ones, overwrite writes every file again. One status line per run; the folder can be opened.
TEST_F(BatchDialogTest, ExistingOutputsGetAChoice) {
  for (int i = 0; i < 3; ++i) write_image(dir, "in/img" + std::to_string(i) + ".png", 48, 32, 3, 20 + i);
  window->set_chain({{entry_from_spec("box:radius=1")}, {}});
  window->set_devices("cpu:1");
  BatchDialog* dialog = window->show_batch_dialog();
  dialog->set_folders(in, out);
  EXPECT_FALSE(dialog->can_open_output());
  int asked = -1;
  BatchDialog::Existing answer = BatchDialog::Existing::Cancel;
  dialog->set_existing_chooser([&](int count) {
    asked = count;
    return answer;
  });
  ASSERT_TRUE(run(dialog)) << dialog->error_text().toStdString();
  EXPECT_EQ(asked, -1) << "nothing there yet: no question";
  EXPECT_TRUE(dialog->can_open_output());
  const auto written = std::filesystem::last_write_time(dir / "out/img0.png");

  EXPECT_FALSE(run(dialog));
  EXPECT_EQ(asked, 3);
  EXPECT_TRUE(dialog->status_text().startsWith("Not started")) << dialog->status_text().toStdString();
  EXPECT_EQ(dialog->summary_text(), "") << "one status line per run";
  EXPECT_FALSE(dialog->can_open_output());
  EXPECT_EQ(std::filesystem::last_write_time(dir / "out/img0.png"), written);

  answer = BatchDialog::Existing::Resume;
  ASSERT_TRUE(run(dialog)) << dialog->error_text().toStdString();
  EXPECT_TRUE(dialog->summary_text().contains("3 already done")) << dialog->summary_text().toStdString();
  EXPECT_EQ(std::filesystem::last_write_time(dir / "out/img0.png"), written);

  answer = BatchDialog::Existing::Overwrite;
  ASSERT_TRUE(run(dialog)) << dialog->error_text().toStdString();
  EXPECT_TRUE(dialog->summary_text().contains("3 written")) << dialog->summary_text().toStdString();
  EXPECT_TRUE(dialog->can_open_output());
  EXPECT_EQ(dialog->status_text(), "Finished");
}

// Empty, the dialog says so instead of "0 of 1 files".
TEST_F(BatchDialogTest, EmptyDialogSaysNoFiles) {
  BatchDialog dialog(false);
  EXPECT_EQ(dialog.progress_text(), "no files");
  EXPECT_EQ(dialog.status_text(), "Not started");
}

}  // namespace
}  // namespace tf::gui
