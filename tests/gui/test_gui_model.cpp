// The GUI's model code without windows: preview planning, filter entries and specs, presets,
// kernel files, the slider scale, job views.
#include <QFile>
#include <QJsonDocument>

#include <QIcon>
#include <QImage>
#include <QScopeGuard>

#include <fmt/format.h>

#include "gui_test_support.hpp"
#include "model/filter_entry.hpp"
#include "model/job_view.hpp"
#include "model/preset_files.hpp"
#include "model/preview_plan.hpp"
#include "panels/param_editor.hpp"
#include "test_support.hpp"
#include "tilefilter/engine/backend_rules.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/error.hpp"
#include "window/app_runner.hpp"

namespace tf::gui {
namespace {

using tf::test::ensure_gui_app;

TEST(PreviewPlan, SmallImagesGoStraightToFullResolution) {
  const auto steps = plan_preview({640, 480, {0, 0, 640, 480}, 0.5, 3});
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].pass, PreviewPass::Full);
}

TEST(PreviewPlan, ZoomedOutLargeImageGetsAProxyFirst) {
  // 6000x4000 shown at 1/6: the proxy is the level at most 6x smaller (1/4), then the full image.
  const auto steps = plan_preview({6000, 4000, {0, 0, 6000, 4000}, 1.0 / 6, 5});
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].pass, PreviewPass::Proxy);
  EXPECT_EQ(steps[0].level, 2);
  EXPECT_EQ(steps[0].visible, (Rect{0, 0, 1500, 1000}));
  EXPECT_EQ(steps[1].pass, PreviewPass::Full);
}

TEST(PreviewPlan, ZoomedInLargeImageGetsTheVisibleRegionFirst) {
  const auto steps = plan_preview({6000, 4000, {1000, 500, 1200, 800}, 1.0, 5});
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].pass, PreviewPass::Region);
  EXPECT_EQ(steps[0].visible, (Rect{1000, 500, 1200, 800}));
  // Wrap borders need the opposite edge, which a region does not have: full image only.
  PreviewView wrap{6000, 4000, {1000, 500, 1200, 800}, 1.0, 5, BorderMode::Wrap};
  EXPECT_EQ(plan_preview(wrap).size(), 1u);
}

TEST(PreviewPlan, SmallFirstPassesGoToTheCpuWorkersWhenTheDevicesHaveAGpu) {
  const Chain blur = parse_chain({"gaussian:sigma=1"});
  const long long proxy = 1500LL * 1000;  // 6000x4000 at fit to window: level 2's visible region
  EXPECT_TRUE(first_pass_on_cpu(blur, proxy, 3, true, 16));
  EXPECT_FALSE(first_pass_on_cpu(blur, proxy, 3, false, 16));  // CPU workers chosen anyway
  // Core's estimate grows with the pixels, the channels and the taps, and shrinks with the cores.
  EXPECT_FALSE(first_pass_on_cpu(blur, 6000LL * 4000, 3, true, 16));
  EXPECT_FALSE(first_pass_on_cpu(parse_chain({"gaussian:sigma=30"}), proxy, 3, true, 16));
  EXPECT_FALSE(first_pass_on_cpu(blur, proxy, 3, true, 1));
  EXPECT_TRUE(first_pass_on_cpu(blur, proxy, 1, true, 4));
  EXPECT_FALSE(first_pass_on_cpu(blur, 0, 3, true, 16));
  // A chain on the FFT path stays on the chosen devices, however small: FFTW's bits are not cuFFT's.
  Kernel k{31, 31, 15, 15, {}};
  for (int i = 0; i < 31 * 31; ++i) k.taps.push_back(static_cast<float>(i * 7919 % 101) / 101.0f - 0.5f);  // rank > 1
  const Chain fft{Stage{"random 31x31", {make_convolution(k)}}};
  if (stage_uses_fft(fft[0])) EXPECT_FALSE(first_pass_on_cpu(fft, 16 * 16, 3, true, 16));
  else EXPECT_TRUE(first_pass_on_cpu(fft, 16 * 16, 3, true, 16));  // no FFTW in this build: direct everywhere
}

TEST(PreviewPlan, RegionsGrowByTheHaloAndStayInside) {
  EXPECT_EQ(grow_clipped({10, 10, 20, 20}, {3, 2, 1, 4}, 100, 100), (Rect{7, 8, 24, 26}));
  EXPECT_EQ(grow_clipped({0, 0, 20, 20}, {5, 5, 5, 5}, 22, 100), (Rect{0, 0, 22, 25}));
  EXPECT_EQ(rect_at_level({3, 5, 10, 10}, 1, 50, 50), (Rect{1, 2, 6, 6}));
}

TEST(PreviewPlan, ProxyScalesSpatialParametersOnly) {
  FilterEntry g = default_entry(*find_filter("gaussian"));
  g.numbers["sigma"] = 8;
  FilterEntry b = default_entry(*find_filter("box"));
  b.numbers["radius"] = 9;
  FilterEntry s = default_entry(*find_filter("sharpen"));
  s.numbers["amount"] = 3;
  const auto scaled = scaled_for_proxy({g, b, s}, 4);
  EXPECT_DOUBLE_EQ(scaled[0].numbers.at("sigma"), 2);
  EXPECT_DOUBLE_EQ(scaled[0].numbers.at("radius"), 0);  // 0 = automatic, stays so
  EXPECT_DOUBLE_EQ(scaled[1].numbers.at("radius"), 2);
  EXPECT_DOUBLE_EQ(scaled[2].numbers.at("amount"), 3);
  b.numbers["radius"] = 1;
  EXPECT_DOUBLE_EQ(scaled_for_proxy({b}, 8)[0].numbers.at("radius"), 1);  // never below the minimum
}

TEST(FilterEntries, SpecsRoundTripThroughCore) {
  ensure_gui_app();
  for (const char* spec : {"gaussian:sigma=2.5", "box:radius=4", "sobel:dir=x", "sharpen:amount=0.5", "laplacian",
                           "unsharp:sigma=3,amount=1.5"}) {
    const FilterEntry e = entry_from_spec(spec);
    EXPECT_EQ(to_spec(e), spec);
    EXPECT_NO_THROW(parse_filter_spec(to_spec(e)));
  }
  EXPECT_THROW(entry_from_spec("gaussian:sigma=999"), Error);
  EXPECT_THROW(entry_from_spec("nosuchfilter"), Error);
}

TEST(FilterEntries, CustomKernelBecomesAKernelFileCoreReads) {
  ensure_gui_app();
  FilterEntry e = default_entry(*find_filter("custom"));
  e.kernel = KernelGrid{3, 1, {1, 2, 1}};
  const std::string spec = to_spec(e);
  ASSERT_NE(spec.find("custom:file="), std::string::npos) << spec;
  const Stage stage = parse_filter_spec(spec);
  ASSERT_EQ(stage.convs.size(), 1u);
  EXPECT_EQ(stage.convs[0].kernel.width, 3);
  EXPECT_FLOAT_EQ(stage.convs[0].kernel.taps[1], 0.5f);  // normalized: 2 / 4
  EXPECT_EQ(to_spec(e), spec);                           // the same grid, the same file
  // And back: a spec with a kernel file fills the grid.
  const FilterEntry back = entry_from_spec(spec);
  EXPECT_EQ(back.kernel.width, 3);
  EXPECT_DOUBLE_EQ(back.kernel.at(1, 0), 2);
}

TEST(FilterEntries, KernelGridResizeKeepsTheCentre) {
  KernelGrid g = KernelGrid::identity(3, 3);
  g.resize(5, 5);
  EXPECT_DOUBLE_EQ(g.at(2, 2), 1);
  EXPECT_DOUBLE_EQ(g.sum(), 1);
  g.resize(1, 1);
  EXPECT_DOUBLE_EQ(g.at(0, 0), 1);
}

TEST(Presets, BundledPresetsAllLoad) {
  ensure_gui_app();
  const QStringList presets = bundled_presets();
  ASSERT_GE(presets.size(), 4);
  for (const QString& p : presets) {
    SCOPED_TRACE(p.toStdString());
    const Preset preset = read_preset(p);
    EXPECT_FALSE(preset.name.empty());
    ASSERT_FALSE(preset.chain.filters.empty());
    EXPECT_NO_THROW(parse_chain(to_specs(preset.chain.filters)));
  }
}

TEST(Presets, SaveAndLoadGiveTheSameChain) {
  ensure_gui_app();
  tf::test::TempDir dir;
  Preset p;
  p.name = "mine";
  p.chain.border = {BorderMode::Constant, 12};
  p.chain.filters = {entry_from_spec("gaussian:sigma=1.25"), default_entry(*find_filter("custom")),
                     entry_from_spec("sobel:dir=y")};
  p.chain.filters[1].kernel = KernelGrid{3, 3, {0, -1, 0, -1, 5, -1, 0, -1, 0}};
  const QString path = QString::fromStdString(dir / "p.json");
  write_preset(path, p);
  const Preset q = read_preset(path);
  EXPECT_EQ(q.name, "mine");
  EXPECT_TRUE(q.chain == p.chain);
}

// A chain saved from the GUI (custom kernel, constant border) runs in `tilefilter apply --preset`
// with the bits of the GUI's own job.
TEST(Presets, SavedFromTheGuiTheCliRunsTheSameJob) {
  ensure_gui_app();
  tf::test::TempDir dir;
  Preset p;
  p.name = "gui";
  p.chain.border = {BorderMode::Constant, 30};
  p.chain.filters = {entry_from_spec("gaussian:sigma=1.5"), default_entry(*find_filter("custom"))};
  p.chain.filters[1].kernel = KernelGrid{3, 3, {0, -1, 0, -1, 5, -1, 0, -1, 0}};
  p.chain.filters[1].numbers["normalize"] = 0;
  const QString preset = QString::fromStdString(dir / "gui.json");
  write_preset(preset, p);
  // The CLI writes the preset's kernel file under XDG_DATA_HOME: keep it in the scratch folder.
  const QByteArray data_home = qgetenv("XDG_DATA_HOME");
  qputenv("XDG_DATA_HOME", QByteArray::fromStdString(dir.path.string()));
  const auto restore = qScopeGuard([&] {
    if (data_home.isEmpty()) qunsetenv("XDG_DATA_HOME");
    else qputenv("XDG_DATA_HOME", data_home);
  });
  const std::string input = dir / "in.png", output = dir / "out.png";
  encode_file(input, tf::test::random_image(61, 45, Format{PixelType::U8, 3}, 5).view());
  std::string out;
  ASSERT_EQ(tf::test::run_cli(fmt::format("apply {} {} --preset {} -q", input, output, preset.toStdString()), &out), 0)
      << out;
  JobOptions opt;
  opt.border = p.chain.border;
  const Image expected =
      filter_image(decode_file(input), parse_chain(to_specs(p.chain.filters)), select_devices("cpu:1").devices, opt);
  EXPECT_TRUE(same_pixels(decode_file(output).view(), expected.view()));
}

TEST(Presets, BadPresetsSayWhy) {
  ensure_gui_app();
  auto message = [](const char* json) {
    try {
      preset_from_json(json, "x.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("{nope").find("not valid JSON"), std::string::npos);
  // Found by fuzz_preset: a number too large for a double made nlohmann throw out_of_range, which
  // nothing caught (tests/fuzz/regressions/preset/number-out-of-range.json).
  EXPECT_NE(message("3e333333333.3333").find("not valid JSON"), std::string::npos);
  EXPECT_NE(message(R"({"filters": []})").find("no filters"), std::string::npos);
  EXPECT_NE(message(R"({"filters": [{"filter": "blur"}]})").find("unknown filter"), std::string::npos);
  EXPECT_NE(message(R"({"filters": [{"filter": "gaussian", "params": {"sigma": 5000}}]})").find("out of range"),
            std::string::npos);
  EXPECT_NE(message(R"({"border": "mirror", "filters": [{"filter": "box"}]})").find("border"), std::string::npos);
}

TEST(ParamEditor, SliderScaleCoversTheRangeAndFavoursSmallValues) {
  const ParamInfo& sigma = find_filter("gaussian")->params[0];
  EXPECT_EQ(ParamEditor::slider_position(sigma, sigma.min), 0);
  EXPECT_EQ(ParamEditor::slider_position(sigma, sigma.max), ParamEditor::kSliderSteps);  // rests at its end
  EXPECT_GT(ParamEditor::slider_position(sigma, 2.0), ParamEditor::kSliderSteps / 10);   // not crammed at the start
  for (int pos : {0, 137, 500, 999, 1000}) {
    const double v = ParamEditor::slider_value(sigma, pos);
    EXPECT_GE(v, sigma.min);
    EXPECT_LE(v, sigma.max);
  }
  const ParamInfo& radius = find_filter("box")->params[0];
  EXPECT_EQ(ParamEditor::slider_value(radius, 1000), ParamEditor::soft_max(radius));  // the rest is typed
  EXPECT_EQ(ParamEditor::slider_value(radius, 3), std::round(ParamEditor::slider_value(radius, 3)));
}

TEST(JobViews, SummariseCoreReports) {
  const Image src = make_test_image(300, 200, Format{PixelType::U8, 3}, 3);
  JobReport report;
  filter_image(src, parse_chain({"box:radius=2"}), select_devices("cpu:2").devices, {}, &report);
  const JobView v = job_view(report, "t", 3);
  ASSERT_EQ(v.summaries.size(), v.device_names.size());
  int tiles = 0;
  for (int t : v.tiles_per_device) tiles += t;
  EXPECT_EQ(tiles, report.tiles);
  EXPECT_GE(v.records.size(), static_cast<std::size_t>(report.tiles));
  EXPECT_LE(first_start(v.records), v.records.front().t0);
}

}  // namespace
}  // namespace tf::gui

namespace tf::gui {
namespace {

TEST(Resources, IconsRender) {
  ensure_gui_app();
  init_resources();
  for (const char* name :
       {"tilefilter", "zoom-fit", "zoom-100", "compare", "apply", "batch", "speedup", "undo", "redo"}) {
    const QIcon icon(QStringLiteral(":/icons/%1.svg").arg(QLatin1String(name)));
    const QImage image = icon.pixmap(128, 128).toImage();
    ASSERT_FALSE(image.isNull()) << name;
    int opaque = 0;
    for (int y = 0; y < image.height(); ++y)
      for (int x = 0; x < image.width(); ++x) opaque += qAlpha(image.pixel(x, y)) > 0;
    EXPECT_GT(opaque, 128 * 128 / 50) << name << " draws almost nothing";
    if (!qEnvironmentVariableIsEmpty("TF_GUI_SHOTS"))
      image.save(qEnvironmentVariable("TF_GUI_SHOTS") + QStringLiteral("/icon-%1.png").arg(QLatin1String(name)));
  }
}

}  // namespace
}  // namespace tf::gui
