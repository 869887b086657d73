// tilefilter-gui as a program: --help, and --screenshot, which the README images are made with.
#include <QFileInfo>
#include <QImage>
#include <QProcess>

#include "gui_test_support.hpp"

namespace tf::gui {
namespace {

using namespace tf::test;

struct GuiRun {
  int code = -1;
  QString output;
};

GuiRun run_gui(const QStringList& args, int timeout_ms = 60000) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
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

}  // namespace
}  // namespace tf::gui
