#include "batch_fixture.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "tilefilter/io/codec.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace tf::test {

namespace {
void put_image(const std::string& path, int w, int h, Format f, std::uint32_t seed) {
  fs::create_directories(fs::path(path).parent_path());
  encode_file(path, random_image(w, h, f, seed).view(), quality_only(90));
}
}  // namespace

MixedFolder make_mixed_folder(const std::string& root, std::uint32_t seed) {
  MixedFolder m;
  const Format rgb{PixelType::U8, 3}, rgba{PixelType::U8, 4}, gray{PixelType::U8, 1};
  auto add = [&](const std::string& rel, int w, int h, Format f) {
    put_image(root + "/" + rel, w, h, f, seed++);
    m.images.push_back(rel);
  };
  add("a.png", 97, 61, rgb);
  add("b.jpg", 256, 170, rgb);
  add("c.png", 33, 250, rgba);
  add("IMG_0001.JPG", 300, 200, rgb);
  add("sub/d.jpg", 640, 360, rgb);
  add("sub/e.bmp", 45, 45, rgb);
  add("sub/deep/f.png", 123, 77, gray);
  add("sub/deep/g.tga", 64, 40, rgba);
  add("sub/deep/tiny.png", 1, 1, rgb);
  if (have_opencv_codecs()) add("sub/h16.png", 70, 50, Format{PixelType::U16, 3});  // 16-bit PNG output needs OpenCV
  if (have_opencv_codecs()) add("sub/t.tif", 90, 66, rgb);

  // Broken ones, each for a different reason.
  const auto good = read_bytes(root + "/b.jpg");
  write_bytes(root + "/sub/truncated.jpg", std::vector<unsigned char>(good.begin(), good.begin() + good.size() / 2));
  const auto png = read_bytes(root + "/a.png");
  write_bytes(root + "/sub/deep/truncated.png",
              std::vector<unsigned char>(png.begin(), png.begin() + png.size() * 2 / 3));
  std::vector<unsigned char> corrupt(4000);
  std::mt19937 rng(seed);
  for (auto& b : corrupt) b = static_cast<unsigned char>(rng());
  corrupt[0] = 0xFF, corrupt[1] = 0xD8, corrupt[2] = 0xFF;  // JPEG magic, garbage after it
  write_bytes(root + "/corrupt.jpg", corrupt);
  write_bytes(root + "/empty.png", {});
  for (const char* b : {"sub/truncated.jpg", "sub/deep/truncated.png", "corrupt.jpg", "empty.png"}) {
    m.images.push_back(b);
    m.broken.push_back(b);
  }

  // Not images: listed as skipped.
  write_bytes(root + "/notes.txt", {'h', 'i', '\n'});
  write_bytes(root + "/sub/data.bin", std::vector<unsigned char>(corrupt.begin(), corrupt.begin() + 100));
  m.others = {"notes.txt", "sub/data.bin"};
  return m;
}

std::vector<std::string> make_flat_folder(const std::string& root, int count, int width, int height,
                                          std::uint32_t seed) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    const std::string name = fmt::format("img{:03}.{}", i, i % 2 ? "png" : "jpg");
    put_image(root + "/" + name, width, height, Format{PixelType::U8, 3}, seed + i);
    names.push_back(name);
  }
  return names;
}

std::vector<std::string> temporaries_under(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(".tf-") != std::string::npos && name.ends_with(".tmp")) out.push_back(it->path().string());
  }
  return out;
}

std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  // Files may come and go while a batch runs beside us: no canonical paths, no throwing.
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code file_ec;
    if (it->is_regular_file(file_ec) && it->path().filename() != ".tilefilter-batch.json")  // the job record
      out.push_back(it->path().lexically_relative(dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

pid_t spawn_cli(const std::vector<std::string>& args, const std::string& log,
                const std::vector<std::string>& extra_env) {
  std::vector<std::string> argv{TF_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn_program(argv, log, extra_env);
}

pid_t spawn_program(std::vector<std::string> argv_s, const std::string& log,
                    const std::vector<std::string>& extra_env) {
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> env_s(extra_env);
  for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
  std::vector<char*> env;
  for (auto& e : env_s) env.push_back(e.data());
  env.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

int wait_cli(pid_t pid, struct rusage* usage) {
  int status = 0;
  struct rusage ru {};
  if (::wait4(pid, &status, 0, &ru) != pid) return -1;
  if (usage) *usage = ru;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace tf::test
