// `tilefilter batch` against `tilefilter apply`, file by file, on a generated nested folder with
// mixed formats and sizes and broken and non-image files; the JSON report; exit codes.
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "batch_fixture.hpp"
#include "tilefilter/io/codec.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace tf::test {
namespace {

std::string canon(const std::string& p) { return fs::weakly_canonical(p).string(); }

std::map<std::string, json> files_by_input(const json& report) {
  std::map<std::string, json> m;
  for (const auto& f : report.at("files")) m[f.at("input").get<std::string>()] = f;
  return m;
}

// Same pixels, and for the deterministic stb writers (PNG, JPEG, BMP, TGA) the same bytes.
void expect_same_output(const std::string& batch_out, const std::string& apply_out) {
  const Image a = decode_file(batch_out), b = decode_file(apply_out);
  EXPECT_TRUE(same_pixels(a.view(), b.view())) << batch_out << " differs from apply's " << apply_out;
  const std::string ext = fs::path(batch_out).extension().string();
  if (ext != ".tif")
    EXPECT_TRUE(read_bytes(batch_out) == read_bytes(apply_out)) << batch_out << ": bytes differ from apply's";
}

TEST(BatchCli, MixedFolderMatchesApplyFileByFile) {
  TempDir dir;
  const std::string in = dir / "in", out = dir / "out", ref = dir / "ref", report_path = dir / "report.json";
  const MixedFolder m = make_mixed_folder(in, test_seed(40));
  const std::string filters = fmt::format("--filter {} --filter sharpen:amount=0.5", kBatchFilter);
  std::string log;
  const int rc = run_cli(fmt::format("batch {} {} -r {} --devices cpu:2 --quality 90 --report {}", quoted(in),
                                     quoted(out), filters, quoted(report_path)),
                         &log);
  EXPECT_EQ(rc, 3) << "some files are broken, the rest must succeed\n" << log;

  const json report = json::parse(read_text(report_path));  // throws (fails the test) when invalid
  EXPECT_EQ(report.at("counts").at("files").get<std::size_t>(), m.images.size());
  EXPECT_EQ(report.at("counts").at("failed").get<std::size_t>() >= m.broken.size(), true);
  const auto by_input = files_by_input(report);
  std::set<std::string> expected_outputs;
  for (const auto& rel : m.images) {
    SCOPED_TRACE(rel);
    const auto it = by_input.find(canon(in + "/" + rel));
    ASSERT_NE(it, by_input.end()) << "the report must list every image file";
    const json& f = it->second;
    const std::string status = f.at("status");
    const std::string output = f.at("output");
    const bool broken = std::find(m.broken.begin(), m.broken.end(), rel) != m.broken.end();
    if (broken) {
      EXPECT_EQ(status, "failed");
      EXPECT_FALSE(f.value("reason", "").empty());
      EXPECT_FALSE(fs::exists(output));
      continue;
    }
    // The same file through `apply`, to the same relative name under ref/.
    const std::string rel_out = fs::relative(output, canon(out)).string();
    const std::string apply_out = ref + "/" + rel_out;
    fs::create_directories(fs::path(apply_out).parent_path());
    std::string apply_log;
    const int apply_rc = run_cli(fmt::format("apply {} {} {} --devices cpu:1 --quality 90 -q", quoted(in + "/" + rel),
                                             quoted(apply_out), filters),
                                 &apply_log);
    if (apply_rc != 0) {  // e.g. a 16-bit PNG in a build without OpenCV: batch must fail it too
      EXPECT_EQ(status, "failed") << apply_log;
      continue;
    }
    ASSERT_EQ(status, "ok") << f.dump();
    expected_outputs.insert(rel_out);
    expect_same_output(output, apply_out);
    EXPECT_GT(f.at("output_bytes").get<std::size_t>(), 0u);
    EXPECT_GT(f.at("input_bytes").get<std::size_t>(), 0u);
    EXPECT_FALSE(f.at("decoder").get<std::string>().empty());
    EXPECT_FALSE(f.at("encoder").get<std::string>().empty());
  }
  // Exactly the expected outputs, nothing else (no temporaries, nothing for broken files).
  const auto produced = files_under(out);
  EXPECT_EQ(std::set<std::string>(produced.begin(), produced.end()), expected_outputs);
  EXPECT_TRUE(temporaries_under(out).empty());
  // Non-images are listed as skipped.
  const std::string skipped = report.at("skipped").dump();
  for (const auto& o : m.others) EXPECT_NE(skipped.find(o), std::string::npos) << skipped;
  // A per-device summary that accounts for every filtered image.
  int images = 0;
  for (const auto& d : report.at("devices")) images += d.at("images").get<int>();
  EXPECT_EQ(images, report.at("counts").at("ok").get<int>());
  EXPECT_NE(log.find("devices:"), std::string::npos) << log;
  EXPECT_NE(log.find("truncated"), std::string::npos) << "failures are named with their reason\n" << log;
}

TEST(BatchCli, NoFilterConvertsFormatLikeApplyIdentity) {
  TempDir dir;
  const std::string in = dir / "in", out = dir / "out", ref = dir / "ref";
  const auto names = make_flat_folder(in, 4, 150, 97, test_seed(50));
  std::string log;
  EXPECT_EQ(run_cli(fmt::format("batch {} {} --format png --devices cpu:1", quoted(in), quoted(out)), &log), 0) << log;
  fs::create_directories(ref);
  for (const auto& n : names) {
    const std::string png = fs::path(n).replace_extension(".png").string();
    ASSERT_EQ(run_cli(fmt::format("apply {} {} -f identity -q", quoted(in + "/" + n), quoted(ref + "/" + png))), 0);
    expect_same_output(out + "/" + png, ref + "/" + png);
  }
  EXPECT_NE(log.find("no filter"), std::string::npos) << log;
}

// --memory takes sizes as a user writes them (1.5G, 512MiB, 2gb, a count of bytes) and says what it
// cannot read, naming the flag.
TEST(BatchCli, MemoryTakesFractionsAndUnits) {
  TempDir dir;
  const std::string in = dir / "in", report = dir / "report.json";
  make_flat_folder(in, 2, 40, 30, test_seed(55));
  const std::pair<const char*, std::uint64_t> sizes[] = {{"1.5G", 1536ull << 20},     {"512MiB", 512ull << 20},
                                                         {"2gb", 2ull << 30},         {"0.75g", 768ull << 20},
                                                         {"100000000", 100000000ull}, {"64k", 64ull << 10}};
  for (const auto& [text, bytes] : sizes) {
    std::string log;
    ASSERT_EQ(run_cli(fmt::format("batch {} {} -f box --devices cpu:1 --memory {} --report {}", quoted(in),
                                  quoted(dir / (std::string("out-") + text)), text, quoted(report)),
                      &log),
              0)
        << text << "\n"
        << log;
    EXPECT_EQ(json::parse(read_text(report)).at("max_inflight_bytes").get<std::uint64_t>(), bytes) << text;
  }
  for (const char* bad : {"1.5X", "G", "-1G", "1.5GG", "lots"}) {
    std::string log;
    EXPECT_EQ(run_cli(fmt::format("batch {} {} -f box --memory {}", quoted(in), quoted(dir / "bad"), bad), &log), 2)
        << bad;
    EXPECT_NE(log.find("--memory"), std::string::npos) << bad << ": " << log;
    EXPECT_NE(log.find("512M, 1.5G or 2GiB"), std::string::npos) << bad << ": " << log;
  }
}

TEST(BatchCli, ExitCodes) {
  TempDir dir;
  const std::string good = dir / "good", bad = dir / "bad", empty = dir / "empty";
  make_flat_folder(good, 2, 40, 30, test_seed(60));
  write_bytes(bad + "/x.png", {1, 2, 3});
  write_bytes(bad + "/y.jpg", {0xFF, 0xD8, 0xFF, 0, 1});
  fs::create_directories(empty);
  std::string log;
  EXPECT_EQ(run_cli(fmt::format("batch {} {} -f box --devices cpu:1", quoted(good), quoted(dir / "o1")), &log), 0)
      << log;
  EXPECT_EQ(run_cli(fmt::format("batch {} {} -f box --devices cpu:1", quoted(bad), quoted(dir / "o2")), &log), 1)
      << "nothing done\n"
      << log;
  EXPECT_EQ(run_cli(fmt::format("batch {} {} -f box", quoted(empty), quoted(dir / "o3")), &log), 1) << log;
  EXPECT_NE(log.find("no image files"), std::string::npos) << log;
  EXPECT_EQ(run_cli(fmt::format("batch {} {} -f box", quoted(dir / "missing"), quoted(dir / "o4")), &log), 1) << log;
  // One file instead of a folder: refused, pointing to apply.
  EXPECT_EQ(run_cli(fmt::format("batch {} {} -f box", quoted(bad + "/x.png"), quoted(dir / "o6")), &log), 1) << log;
  EXPECT_NE(log.find("tilefilter apply"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(dir / "o6"));
  EXPECT_EQ(run_cli(fmt::format("batch {} {} -f nosuchfilter", quoted(good), quoted(dir / "o5")), &log), 2) << log;
  // OUT_DIR inside IN_DIR with --recursive: refused before anything is written, unless excluded.
  EXPECT_EQ(run_cli(fmt::format("batch {} {} -r -f box", quoted(good), quoted(good + "/out")), &log), 2) << log;
  EXPECT_NE(log.find("--exclude"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(good + "/out"));
  EXPECT_EQ(
      run_cli(fmt::format("batch {0} {1} -r --exclude {1} -f box --devices cpu:1", quoted(good), quoted(good + "/out")),
              &log),
      0)
      << log;
  EXPECT_EQ(files_under(good + "/out").size(), 2u);
  // Running it again with --resume walks past the excluded folder and redoes nothing.
  EXPECT_EQ(
      run_cli(fmt::format("batch {0} {1} -r --exclude {1} -f box --resume", quoted(good), quoted(good + "/out")), &log),
      0)
      << log;
  EXPECT_NE(log.find("2 already done"), std::string::npos) << log;
  // The input folder as output: refused.
  EXPECT_EQ(run_cli(fmt::format("batch {0} {0} -f box", quoted(good)), &log), 2) << log;
  // The report named as one of the inputs: refused, the input untouched.
  const std::string input = fs::directory_iterator(good)->path().string();
  const auto input_bytes = read_bytes(input);
  EXPECT_EQ(run_cli(fmt::format("batch {} {} -f box --devices cpu:1 --report {}", quoted(good), quoted(dir / "o7"),
                                quoted(input)),
                    &log),
            2)
      << log;
  EXPECT_NE(log.find("is one of the input files"), std::string::npos) << log;
  EXPECT_TRUE(read_bytes(input) == input_bytes);
}

TEST(BatchCli, ResumeRefusesAFolderMadeByAnotherJob) {
  TempDir dir;
  const std::string in = dir / "in", out = dir / "out";
  fs::create_directories(in);
  for (int i = 0; i < 2; ++i)
    encode_file(fmt::format("{}/p{}.png", in, i), make_test_image(64 + i, 48, Format{PixelType::U8, 3}, 30 + i).view());
  std::string log;
  ASSERT_EQ(run_cli(fmt::format("batch {} {} -f box --devices cpu:1", quoted(in), quoted(out)), &log), 0) << log;
  const auto before = read_bytes(out + "/p0.png");
  // Another filter, or another border: --resume would keep outputs the new job would not make.
  for (const char* other : {"-f gaussian:sigma=2", "-f box --border wrap"}) {
    EXPECT_EQ(run_cli(fmt::format("batch {} {} {} --resume --devices cpu:1", quoted(in), quoted(out), other), &log), 2)
        << log;
    EXPECT_NE(log.find("--resume would mix two jobs"), std::string::npos) << log;
    EXPECT_NE(log.find("box"), std::string::npos) << "names the earlier job's filters\n" << log;
    EXPECT_TRUE(read_bytes(out + "/p0.png") == before) << "nothing written";
  }
  // The same job resumes; without --resume another job redoes every file and takes the folder over.
  EXPECT_EQ(run_cli(fmt::format("batch {} {} -f box --resume --devices cpu:1", quoted(in), quoted(out)), &log), 0)
      << log;
  EXPECT_NE(log.find("2 already done"), std::string::npos) << log;
  EXPECT_EQ(run_cli(fmt::format("batch {} {} -f gaussian:sigma=2 --devices cpu:1", quoted(in), quoted(out)), &log), 0)
      << log;
  EXPECT_FALSE(read_bytes(out + "/p0.png") == before);
  EXPECT_EQ(
      run_cli(fmt::format("batch {} {} -f gaussian:sigma=2 --resume --devices cpu:1", quoted(in), quoted(out)), &log),
      0)
      << log;
  // A folder without a record (made by hand, or by an older version) resumes, saying so.
  fs::remove(out + "/.tilefilter-batch.json");
  EXPECT_EQ(run_cli(fmt::format("batch {} {} -f box --resume --devices cpu:1", quoted(in), quoted(out)), &log), 0)
      << log;
  EXPECT_NE(log.find("no record of an earlier job"), std::string::npos) << log;
}

}  // namespace
}  // namespace tf::test
