// `tilefilter` as a user runs it: bad input gets one clear line naming the file and the reason, a
// non-zero exit code, and no output file; good input matches the library.
#include <sys/stat.h>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "test_support.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/filters/preset.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/io/io.hpp"
#include "tilefilter/util/nearest_name.hpp"

namespace tf {
namespace {

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    input = dir / "in.png";
    encode_file(input, test::random_image(123, 77, Format{PixelType::U8, 3}, 21).view());
    output = dir / "out.png";
  }
  // Runs a failing command: checks exit code, a message naming `names`, and no output left behind.
  void expect_failure(const std::string& args, const std::string& names, const std::string& reason) {
    std::string out;
    const int rc = test::run_cli(args, &out);
    EXPECT_NE(rc, 0) << args << "\n" << out;
    EXPECT_NE(out.find(names), std::string::npos) << "message should name " << names << ":\n" << out;
    EXPECT_NE(out.find(reason), std::string::npos) << "message should say " << reason << ":\n" << out;
    EXPECT_FALSE(std::filesystem::exists(output)) << args;
    for (const auto& e : std::filesystem::directory_iterator(dir.path))
      EXPECT_EQ(e.path().filename().string().find(".tf-"), std::string::npos) << "temporary left: " << e.path();
  }
  test::TempDir dir;
  std::string input, output;
};

TEST_F(Cli, ApplyMatchesTheLibrary) {
  std::string out;
  ASSERT_EQ(
      test::run_cli(fmt::format("apply {} {} -f gaussian:sigma=2 -f sharpen --devices cpu:3 --tile 32", input, output),
                    &out),
      0)
      << out;
  const Image src = decode_file(input);
  JobOptions opt;
  const Image expected =
      filter_image(src, parse_chain({"gaussian:sigma=2", "sharpen"}), select_devices("cpu:1").devices, opt);
  EXPECT_TRUE(same_pixels(decode_file(output).view(), expected.view()));
}

TEST_F(Cli, BorderAndValueReachTheJob) {
  ASSERT_EQ(
      test::run_cli(fmt::format("apply {} {} -f box:radius=5 --border constant --border-value 255 -q", input, output)),
      0);
  const Image src = decode_file(input);
  JobOptions opt;
  opt.border = {BorderMode::Constant, 255};
  const Image expected = filter_image(src, parse_chain({"box:radius=5"}), select_devices("cpu:1").devices, opt);
  EXPECT_TRUE(same_pixels(decode_file(output).view(), expected.view()));
}

TEST_F(Cli, HelpVersionFiltersDevices) {
  std::string out;
  EXPECT_EQ(test::run_cli("--version", &out), 0);
  EXPECT_NE(out.find("tilefilter"), std::string::npos);
  for (const char* sub : {"apply", "filters", "devices", "generate", "batch", "bench"}) {
    EXPECT_EQ(test::run_cli(fmt::format("{} --help", sub), &out), 0) << sub;
    EXPECT_NE(out.find("--"), std::string::npos) << sub;
  }
  EXPECT_EQ(test::run_cli("filters", &out), 0);
  for (const char* f : {"box", "gaussian", "sharpen", "unsharp", "sobel", "laplacian", "emboss", "custom"})
    EXPECT_NE(out.find(f), std::string::npos) << f;
  EXPECT_EQ(test::run_cli("devices --devices cpu:2", &out), 0) << out;
  EXPECT_NE(out.find("cpu1"), std::string::npos) << out;
}

// `bench --timeline` writes every stage of each host-resident median run: one row per tile and
// device count, times inside the run, the tile's bytes.
TEST_F(Cli, BenchTimelineHasEveryTile) {
  const std::string csv = dir / "timeline.csv";
  std::string out;
  ASSERT_EQ(test::run_cli(fmt::format("bench --devices cpu:2 --mode host --size 200x150 --tile 64 --repeats 1 "
                                      "-f gaussian:sigma=1.5 --timeline {}",
                                      csv),
                          &out),
            0)
      << out;
  std::ifstream in(csv);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, "workload,devices,device,lane,stage,tile,start_ms,end_ms,bytes");
  int rows = 0;
  std::set<std::pair<int, int>> tiles;  // (device count, tile)
  while (std::getline(in, line)) {
    ++rows;
    EXPECT_EQ(line.rfind("\"gaussian:sigma=1.5\",", 0), 0u) << line;
    int devices = 0, device = 0, lane = 0, tile = 0;
    char stage[32] = {};
    double t0 = 0, t1 = 0;
    unsigned long long bytes = 0;
    ASSERT_EQ(std::sscanf(line.c_str() + line.find("\",") + 2, "%d,%d,%d,%31[^,],%d,%lf,%lf,%llu", &devices, &device,
                          &lane, stage, &tile, &t0, &t1, &bytes),
              8)
        << line;
    EXPECT_EQ(std::string(stage), "compute") << line;
    EXPECT_LE(t0, t1) << line;
    EXPECT_GT(bytes, 0u) << line;
    tiles.insert({devices, tile});
  }
  // 4 x 3 tiles of 64x64 for 200x150, for one CPU worker and then two.
  EXPECT_EQ(rows, 24);
  EXPECT_EQ(tiles.size(), 24u);
}

// `bench --host-memory` says in its JSON which host memory the host-resident runs used, and takes
// only the two kinds it knows.
TEST_F(Cli, BenchSaysWhichHostMemory) {
  const std::string json = dir / "bench.json";
  std::string out;
  ASSERT_EQ(test::run_cli(fmt::format("bench --devices cpu:1 --mode host --size 64x48 --repeats 1 -f box:radius=2 "
                                      "--host-memory pageable --json {}",
                                      json),
                          &out),
            0)
      << out;
  EXPECT_NE(out.find("pageable host image"), std::string::npos) << out;
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"host_memory\": \"pageable\""), std::string::npos) << text;
  EXPECT_NE(test::run_cli("bench --devices cpu:1 --mode host --size 64x48 --host-memory swap", &out), 0);
  EXPECT_NE(out.find("--host-memory"), std::string::npos) << out;
}

TEST_F(Cli, MissingFile) {
  expect_failure(fmt::format("apply {} {} -f box", dir / "nope.png", output), "nope.png", "no such file");
}

TEST_F(Cli, DirectoryInsteadOfFile) {
  std::filesystem::create_directory(dir / "d.png");
  expect_failure(fmt::format("apply {} {} -f box", dir / "d.png", output), "d.png", "directory");
}

TEST_F(Cli, ZeroByteFile) {
  std::ofstream(dir / "zero.png").close();
  expect_failure(fmt::format("apply {} {} -f box", dir / "zero.png", output), "zero.png", "empty");
}

TEST_F(Cli, TruncatedPngAndJpeg) {
  const Image img = make_test_image(200, 150, Format{PixelType::U8, 3}, 9);
  for (const char* ext : {".png", ".jpg"}) {
    const std::string whole = dir / (std::string("whole") + ext), cut = dir / (std::string("cut") + ext);
    encode_file(whole, img.view());
    const auto size = std::filesystem::file_size(whole);
    std::filesystem::copy_file(whole, cut);
    std::filesystem::resize_file(cut, size * 2 / 3);
    expect_failure(fmt::format("apply {} {} -f box", cut, output), cut, "truncated");
  }
}

TEST_F(Cli, TextFileNamedPng) {
  std::ofstream(dir / "text.png") << "hello, not an image\n";
  expect_failure(fmt::format("apply {} {} -f box", dir / "text.png", output), "text.png", "not a readable image");
}

TEST_F(Cli, OverThePixelLimit) {
  // Images read band by band have their own limit; images decoded whole (BMP here) the pixel limit.
  const std::string streamed_limit = writer_streams("x.png") ? "--stream-pixel-limit" : "--pixel-limit";
  expect_failure(fmt::format("apply {} {} -f box {} 5000", input, output, streamed_limit), "in.png",
                 "exceeds the limit");
  const std::string bmp = dir / "in.bmp";
  encode_file(bmp, test::random_image(123, 77, Format{PixelType::U8, 3}, 21).view());
  expect_failure(fmt::format("apply {} {} -f box --pixel-limit 5000", bmp, output), "in.bmp", "exceeds the limit");
}

TEST_F(Cli, UnknownFilterAndParameter) {
  expect_failure(fmt::format("apply {} {} -f blurry", input, output), "blurry", "unknown filter");
  expect_failure(fmt::format("apply {} {} -f gaussian:sigmaa=1", input, output), "sigmaa", "unknown parameter");
  expect_failure(fmt::format("apply {} {} -f box --border mirror", input, output), "mirror", "--border");
}

// --streams takes 1..64 as its message says: an explicit 0 is refused, not read as "automatic".
TEST_F(Cli, StreamsOutOfRange) {
  for (const char* n : {"0", "65", "-1"})
    expect_failure(fmt::format("apply {} {} -f box --devices cpu:1 --streams {}", input, output, n), "--streams",
                   "between 1 and 64");
  std::string out;
  EXPECT_EQ(test::run_cli(fmt::format("apply {} {} -f box --devices cpu:1 --streams 64", input, output), &out), 0)
      << out;
}

TEST_F(Cli, MalformedAndEmptyKernelFiles) {
  std::ofstream(dir / "bad.txt") << "1 2 3\n4 5\n";
  std::ofstream(dir / "empty.txt").close();
  expect_failure(fmt::format("apply {} {} -f custom:file={}", input, output, dir / "bad.txt"), "bad.txt",
                 "row has 2 numbers");
  expect_failure(fmt::format("apply {} {} -f custom:file={}", input, output, dir / "empty.txt"), "empty.txt",
                 "no numbers");
}

TEST_F(Cli, UnwritableOutput) {
  std::filesystem::create_directory(dir / "ro");
  ::chmod((dir / "ro").c_str(), 0555);
  output = dir / "ro/out.png";
  if (::geteuid() == 0) {
    // root ignores permissions; a missing folder is the unwritable case that remains.
    output = dir / "missing-folder/out.png";
    expect_failure(fmt::format("apply {} {} -f box", input, output), "out.png", "cannot write");
  } else {
    expect_failure(fmt::format("apply {} {} -f box", input, output), "out.png", "cannot write");
  }
}

TEST_F(Cli, OutputEqualsInput) {
  const auto before = std::filesystem::file_size(input);
  std::string out;
  EXPECT_NE(test::run_cli(fmt::format("apply {} {} -f box", input, input), &out), 0);
  EXPECT_NE(out.find("output is the input"), std::string::npos) << out;
  EXPECT_EQ(std::filesystem::file_size(input), before);
}

TEST_F(Cli, OutputFormatThatCannotHoldTheImage) {
  output = dir / "out.xyz";
  expect_failure(fmt::format("apply {} {} -f box", input, output), "out.xyz", "unknown output format");
}

// --preset reads the files tilefilter-gui saves and bundles: same chain and border as --filter.
TEST_F(Cli, PresetFromTheGuiMatchesTheSameFilters) {
  const std::string bundled = std::string(TF_SOURCE_DIR) + "/resources/presets/edges.json";
  std::string out;
  ASSERT_EQ(test::run_cli(fmt::format("apply {} {} --preset {} --devices cpu:2 -q", input, output, bundled), &out), 0)
      << out;
  const Image src = decode_file(input);
  JobOptions opt;
  opt.border = {BorderMode::Replicate, 0};
  const Image expected = filter_image(src, parse_chain({"gaussian:sigma=1.2", "sobel:dir=magnitude"}),
                                      select_devices("cpu:1").devices, opt);
  EXPECT_TRUE(same_pixels(decode_file(output).view(), expected.view()));
  // A bundled preset by name: the same file (installed beside bin/, here the source tree's).
  const std::string by_name = dir / "by-name.png";
  ASSERT_EQ(test::run_cli(fmt::format("apply {} {} --preset edges --devices cpu:2 -q", input, by_name), &out), 0)
      << out;
  EXPECT_TRUE(same_pixels(decode_file(by_name).view(), expected.view()));
}

TEST_F(Cli, PresetWithACustomKernelThenFilterAndBorderFlags) {
  // The CLI writes the preset's kernel file under XDG_DATA_HOME: keep it in the scratch folder.
  struct DataHome {
    explicit DataHome(const char* dir) : old(std::getenv("XDG_DATA_HOME") ? std::getenv("XDG_DATA_HOME") : "") {
      ::setenv("XDG_DATA_HOME", dir, 1);
    }
    ~DataHome() { old.empty() ? ::unsetenv("XDG_DATA_HOME") : ::setenv("XDG_DATA_HOME", old.c_str(), 1); }
    std::string old;
  } data_home(dir.path.c_str());
  const std::string preset = dir / "mine.json";
  std::ofstream(preset) << R"({"name": "mine", "border": "constant", "border_value": 40, "filters": [
    {"filter": "custom", "params": {"normalize": true}, "kernel": [[1, 2, 1], [2, 4, 2], [1, 2, 1]]}]})";
  const std::string kernel = dir / "k.txt";
  std::ofstream(kernel) << "1 2 1\n2 4 2\n1 2 1\n";
  std::string out;
  ASSERT_EQ(test::run_cli(fmt::format("apply {} {} --preset {} -f sharpen -q", input, output, preset), &out), 0) << out;
  const Image src = decode_file(input);
  JobOptions opt;
  opt.border = {BorderMode::Constant, 40};
  const Chain chain = parse_chain({"custom:file=" + kernel + ",normalize=true", "sharpen"});
  EXPECT_TRUE(
      same_pixels(decode_file(output).view(), filter_image(src, chain, select_devices("cpu:1").devices, opt).view()));
  // --border wins over the preset's.
  ASSERT_EQ(test::run_cli(fmt::format("apply {} {} --preset {} -f sharpen --border wrap -q", input, output, preset)),
            0);
  opt.border = {BorderMode::Wrap, 0};
  EXPECT_TRUE(
      same_pixels(decode_file(output).view(), filter_image(src, chain, select_devices("cpu:1").devices, opt).view()));
}

TEST_F(Cli, BatchTakesAPreset) {
  std::filesystem::create_directory(dir / "in");
  std::filesystem::copy_file(input, dir / "in/a.png");
  const std::string bundled = std::string(TF_SOURCE_DIR) + "/resources/presets/soft-focus.json";
  std::string out;
  ASSERT_EQ(test::run_cli(fmt::format("batch {} {} --preset {} -q", dir / "in", dir / "out", bundled), &out), 0) << out;
  const Preset preset = load_preset(bundled);
  JobOptions opt;
  opt.border = preset.chain.border;
  const Image expected = filter_image(decode_file(input), parse_chain(to_specs(preset.chain.filters)),
                                      select_devices("cpu:1").devices, opt);
  EXPECT_TRUE(same_pixels(decode_file(dir / "out/a.png").view(), expected.view()));
}

TEST_F(Cli, BadPresetSaysWhy) {
  const std::string preset = dir / "bad.json";
  std::ofstream(preset) << R"({"filters": [{"filter": "gaussian", "params": {"sigma": 5000}}]})";
  expect_failure(fmt::format("apply {} {} --preset {}", input, output, preset), "bad.json", "out of range");
  expect_failure(fmt::format("apply {} {} --preset {}", input, output, dir / "none.json"), "none.json",
                 "cannot open preset");
}

// Typos get the nearest name, as git and cargo do; every error line starts with "tilefilter:".
TEST_F(Cli, SuggestsTheNearestName) {
  auto error_of = [&](const std::string& args) {
    std::string out;
    EXPECT_EQ(test::run_cli(args, &out), 2) << args << "\n" << out;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) EXPECT_EQ(line.rfind("tilefilter: ", 0), 0u) << args << ": " << line;
    return out;
  };
  EXPECT_NE(error_of(fmt::format("aply {} {}", input, output)).find("did you mean 'apply'?"), std::string::npos);
  EXPECT_NE(error_of("devcies").find("did you mean 'devices'?"), std::string::npos);
  EXPECT_NE(error_of(fmt::format("apply {} {} -f gausian", input, output)).find("did you mean 'gaussian'?"),
            std::string::npos);
  EXPECT_NE(error_of(fmt::format("apply {} {} -f gaussian:sigm=2", input, output)).find("did you mean 'sigma'?"),
            std::string::npos);
  EXPECT_NE(error_of(fmt::format("apply {} {} -f box --boder wrap", input, output)).find("did you mean '--border'?"),
            std::string::npos);
  const std::string missing = error_of(fmt::format("apply {}", input));
  EXPECT_NE(missing.find("output"), std::string::npos) << missing;
  EXPECT_NE(missing.find("tilefilter apply --help"), std::string::npos) << missing;
  // An image or a folder where the command goes (as `convert IN OUT`), and a verb people type: what does it.
  EXPECT_NE(error_of(fmt::format("{} {}", input, output)).find("to filter an image: tilefilter apply " + input),
            std::string::npos);
  EXPECT_NE(error_of(fmt::format("{} {}", dir.path.string(), output)).find("tilefilter batch " + dir.path.string()),
            std::string::npos);
  EXPECT_NE(error_of(fmt::format("filter {} {}", input, output)).find("did you mean 'apply' (filters one image)"),
            std::string::npos);
  // Nothing close: no guess, the known names instead.
  const std::string far = error_of("zzzzzz");
  EXPECT_EQ(far.find("did you mean"), std::string::npos) << far;
  EXPECT_NE(far.find("apply"), std::string::npos) << far;
  EXPECT_FALSE(std::filesystem::exists(output));
}

TEST(NearestName, EditsAndLimits) {
  EXPECT_EQ(edit_distance("aply", "apply"), 1);
  EXPECT_EQ(edit_distance("aplpy", "apply"), 1);  // two neighbours swapped
  EXPECT_EQ(edit_distance("BOX", "box"), 0);
  EXPECT_EQ(nearest_name("sharpne", {"sharpen", "unsharp"}), "sharpen");
  EXPECT_EQ(nearest_name("box", {"box", "bx"}), "");  // already a name
  EXPECT_EQ(nearest_name("x", {"y", "box"}), "y");    // one edit is always allowed
  EXPECT_EQ(nearest_name("laplace", {"gaussian", "sobel"}), "");
}

// A machine without a GPU is not news on every command: said once by `devices`, and under --verbose.
TEST_F(Cli, NoGpuNoteOnlyWhenAsked) {
  if (!select_devices("all").note.empty()) {
    std::string out;
    ASSERT_EQ(test::run_cli(fmt::format("apply {} {} -f box", input, output), &out), 0) << out;
    EXPECT_EQ(out.find("no GPU"), std::string::npos) << out;
    std::filesystem::remove(output);
    ASSERT_EQ(test::run_cli(fmt::format("apply {} {} -f box --verbose", input, output), &out), 0) << out;
    EXPECT_NE(out.find("no GPU"), std::string::npos) << out;
    ASSERT_EQ(test::run_cli("devices", &out), 0) << out;
    EXPECT_NE(out.find("GPUs: none usable"), std::string::npos) << out;
  } else {
    GTEST_SKIP() << "this machine has a GPU";
  }
}

}  // namespace
}  // namespace tf
