// `mpirun -n N tilefilter batch` on one host (OpenMPI, --oversubscribe): 2 and 3 ranks give the
// bytes of a single-process batch and one complete merged report, which a single process then
// resumes as its own; a rank killed with SIGKILL in the middle leaves only complete outputs, and
// `--resume` under mpirun finishes the folder. The merge of per-rank reports is tested without
// MPI. The mpirun tests skip where MPI was not built or mpirun is missing.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "batch_fixture.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace tf::test {
namespace {

#ifdef TF_MPIEXEC_PATH
const std::string kMpirun = TF_MPIEXEC_PATH;
#else
const std::string kMpirun;
#endif

constexpr int kFiles = 18;
const std::string kFilter = "gaussian:sigma=2.5";

std::vector<std::string> batch_args(const std::string& in, const std::string& out) {
  return {"batch", in, out, "--filter", kFilter, "--devices", "cpu:1", "--jobs", "1", "--memory", "4M"};
}

// mpirun as root, oversubscribed on a small CI machine, shared memory without ptrace (containers),
// no ssh looked for.
std::vector<std::string> mpi_env() {
  return {"OMPI_ALLOW_RUN_AS_ROOT=1",
          "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
          "OMPI_MCA_rmaps_base_oversubscribe=1",
          "OMPI_MCA_btl=self,vader,tcp",
          "OMPI_MCA_btl_vader_single_copy_mechanism=none",
          "OMPI_MCA_plm_rsh_agent=false",
          "OMPI_MCA_mpi_yield_when_idle=1"};
}

pid_t spawn_mpirun(int ranks, const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv{kMpirun, "--oversubscribe", "-n", std::to_string(ranks), TF_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn_program(argv, log, mpi_env());
}

// The exit code, or -1 after `limit` (the process group is then killed).
int wait_with_limit(pid_t pid, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

// The pid of the `tilefilter` process that is MPI rank `rank` writing to `out`, or -1.
pid_t find_rank(int rank, const std::string& out) {
  const std::string want = fmt::format("OMPI_COMM_WORLD_RANK={}", rank);
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmdline = read_text(entry.path() / "cmdline");
    if (cmdline.find(out) == std::string::npos || cmdline.find("batch") == std::string::npos) continue;
    std::string env = read_text(entry.path() / "environ");
    for (std::size_t at = 0; at < env.size();) {
      const std::size_t end = env.find('\0', at);
      if (env.compare(at, (end == std::string::npos ? env.size() : end) - at, want) == 0) return std::stoi(name);
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  return -1;
}

class BatchMpi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (kMpirun.empty() || !fs::exists(kMpirun)) return;
    dir_ = new TempDir;
    names_ = make_flat_folder(*dir_ / "in", kFiles, 400, 300, test_seed(160));
    const pid_t pid = spawn_cli(batch_args(*dir_ / "in", *dir_ / "ref"), *dir_ / "ref.log");
    ASSERT_EQ(wait_cli(pid), 0) << read_text(*dir_ / "ref.log");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
#ifndef TF_HAVE_MPI
    GTEST_SKIP() << "built without MPI (libopenmpi-dev not found by CMake): the MPI batch is not compiled in";
#endif
    if (!dir_) GTEST_SKIP() << "mpirun not found (openmpi-bin): the MPI batch cannot be launched";
  }

  static std::string in() { return *dir_ / "in"; }

  // Every file under a final name in `out` equals the single-process output, byte for byte.
  static void expect_same_as_single(const std::string& out, bool all) {
    std::size_t finals = 0;
    for (const auto& name : names_) {
      const std::string path = out + "/" + name;
      if (!fs::exists(path)) {
        EXPECT_FALSE(all) << name << " missing";
        continue;
      }
      ++finals;
      EXPECT_TRUE(read_bytes(path) == read_bytes(*dir_ / ("ref/" + name))) << name << " differs from the single run";
    }
    if (all) EXPECT_EQ(finals, names_.size());
  }

  static TempDir* dir_;
  static std::vector<std::string> names_;
};
TempDir* BatchMpi::dir_ = nullptr;
std::vector<std::string> BatchMpi::names_;

TEST_F(BatchMpi, TwoAndThreeRanksMatchOneProcess) {
  for (const int ranks : {2, 3}) {
    SCOPED_TRACE(fmt::format("{} ranks", ranks));
    const std::string out = *dir_ / fmt::format("out{}", ranks), report_path = *dir_ / fmt::format("r{}.json", ranks),
                      log = *dir_ / fmt::format("mpi{}.log", ranks);
    std::vector<std::string> args = batch_args(in(), out);
    args.insert(args.end(), {"--report", report_path});
    const int rc = wait_with_limit(spawn_mpirun(ranks, args, log), std::chrono::seconds(90));
    ASSERT_EQ(rc, 0) << read_text(log);
    expect_same_as_single(out, true);
    EXPECT_TRUE(temporaries_under(out).empty());

    const json report = json::parse(read_text(report_path));
    EXPECT_EQ(report.at("counts").at("files").get<int>(), kFiles);
    EXPECT_EQ(report.at("counts").at("ok").get<int>(), kFiles);
    ASSERT_EQ(report.at("ranks").size(), static_cast<std::size_t>(ranks));
    int ok_by_ranks = 0;
    for (const auto& k : report.at("ranks")) ok_by_ranks += k.at("ok").get<int>();
    EXPECT_EQ(ok_by_ranks, kFiles) << "every file counted once, by the rank that did it";
    std::set<std::string> inputs;
    for (const auto& f : report.at("files")) {
      inputs.insert(f.at("input").get<std::string>());
      EXPECT_EQ(f.at("status"), "ok");
      const int rank = f.at("rank");
      EXPECT_TRUE(rank >= 0 && rank < ranks) << f.dump();
      EXPECT_TRUE(f.at("device").get<std::string>().starts_with("cpu")) << f.dump();
    }
    EXPECT_EQ(inputs.size(), static_cast<std::size_t>(kFiles));
    std::set<std::string> devices;
    for (const auto& d : report.at("devices")) devices.insert(d.at("id").get<std::string>());
    for (int k = 0; k < ranks; ++k) EXPECT_EQ(devices.count(fmt::format("r{}:cpu0", k)), 1u) << report.dump(1);
    // One summary, printed by rank 0.
    const std::string text = read_text(log);
    EXPECT_NE(text.find("ranks:"), std::string::npos) << text;
    EXPECT_EQ(text.find("batch: "), text.rfind("batch: ")) << text;
  }
  // A single process resumes what the ranks did: same job record, nothing left to do.
  const std::string resume_report = *dir_ / "single-resume.json", log = *dir_ / "single-resume.log";
  std::vector<std::string> args = batch_args(in(), *dir_ / "out3");
  args.insert(args.end(), {"--resume", "--report", resume_report});
  ASSERT_EQ(wait_cli(spawn_cli(args, log)), 0) << read_text(log);
  const json report = json::parse(read_text(resume_report));
  EXPECT_EQ(report.at("counts").at("resumed").get<int>(), kFiles);
  EXPECT_FALSE(report.contains("ranks"));
}

TEST_F(BatchMpi, KilledRankLosesOnlyItsFilesInFlightAndResumeFinishes) {
  const std::string out = *dir_ / "killed", log = *dir_ / "killed.log";
  const pid_t mpirun = spawn_mpirun(2, batch_args(in(), out), log);
  pid_t victim = -1;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until && victim < 0) {
    std::size_t finals = 0;
    for (const auto& f : files_under(out)) finals += f.find(".tf-") == std::string::npos;
    if (finals >= 2) victim = find_rank(1, out);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_GT(victim, 0) << "rank 1 not found while the batch ran\n" << read_text(log);
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const int rc = wait_with_limit(mpirun, std::chrono::seconds(60));
  EXPECT_NE(rc, 0) << "the job must end when a rank dies\n" << read_text(log);
  expect_same_as_single(out, false);  // whatever is under a final name is complete
  std::size_t done = 0;
  for (const auto& name : names_) done += fs::exists(out + "/" + name);
  EXPECT_LT(done, names_.size()) << "the kill came too late to test anything";

  const std::string report_path = *dir_ / "resumed.json", log2 = *dir_ / "resumed.log";
  std::vector<std::string> args = batch_args(in(), out);
  args.insert(args.end(), {"--resume", "--report", report_path});
  ASSERT_EQ(wait_with_limit(spawn_mpirun(2, args, log2), std::chrono::seconds(90)), 0) << read_text(log2);
  expect_same_as_single(out, true);
  EXPECT_TRUE(temporaries_under(out).empty()) << "the killed rank's temporary file is cleaned up";
  const json report = json::parse(read_text(report_path));
  const auto& counts = report.at("counts");
  EXPECT_EQ(counts.at("resumed").get<std::size_t>(), done);
  EXPECT_EQ(counts.at("ok").get<std::size_t>() + counts.at("resumed").get<std::size_t>(), names_.size());
}

TEST_F(BatchMpi, JobErrorIsReportedOnce) {
  const std::string log = *dir_ / "error.log";
  const int rc = wait_with_limit(spawn_mpirun(2, batch_args(*dir_ / "no-such-folder", *dir_ / "out-error"), log),
                                 std::chrono::seconds(60));
  const std::string text = read_text(log);
  EXPECT_NE(rc, 0) << text;
  const std::size_t first = text.find("tilefilter: ");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("tilefilter: ", first + 1), std::string::npos) << "only rank 0 says it\n" << text;
}

// Without MPI: the merge itself.
TEST(BatchMerge, EachFileFromTheRankThatDidItDevicesPerRank) {
  auto part = [](int rank, std::vector<int> mine) {
    BatchReport r;
    r.input_dir = "in";
    r.files.resize(4);
    for (int i = 0; i < 4; ++i) {
      r.files[i].input = fmt::format("in/{}.png", i);
      r.files[i].status = FileResult::Status::Cancelled;
    }
    for (int i : mine) {
      r.files[i].rank = rank;
      r.files[i].status = FileResult::Status::Ok;
      r.files[i].width = 1000;
      r.files[i].height = 1000;
    }
    r.device_names = {"cpu0", "cpu-fallback"};
    r.devices = {DeviceSummary{0, "cpu0", 3}, DeviceSummary{1, "cpu-fallback", 0}};
    r.images_per_device = {static_cast<int>(mine.size()), 0};
    r.megapixels = static_cast<double>(mine.size());
    r.decode_threads = r.encode_threads = 2;
    return r;
  };
  const BatchReport m = merge_batch_reports({part(0, {0, 3}), part(1, {1})}, {"a", "b"}, 5.0);
  ASSERT_EQ(m.files.size(), 4u);
  EXPECT_EQ(m.files[0].rank, 0);
  EXPECT_EQ(m.files[1].rank, 1);
  EXPECT_EQ(m.files[2].rank, -1);
  EXPECT_EQ(m.files[2].status, FileResult::Status::Cancelled);
  EXPECT_EQ(m.files[3].rank, 0);
  EXPECT_EQ(m.count(FileResult::Status::Ok), 3);
  ASSERT_EQ(m.devices.size(), 2u);  // unused CPU fallbacks left out
  EXPECT_EQ(m.devices[0].name, "r0:cpu0");
  EXPECT_EQ(m.devices[1].name, "r1:cpu0");
  EXPECT_EQ(m.images_per_device, (std::vector<int>{2, 1}));
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.ranks[1].host, "b");
  EXPECT_EQ(m.ranks[1].files_ok, 1);
  EXPECT_DOUBLE_EQ(m.megapixels, 3.0);
  EXPECT_EQ(m.decode_threads, 4);
  EXPECT_DOUBLE_EQ(m.wall_s, 5.0);
  const json j = json::parse(batch_report_json(m));
  EXPECT_EQ(j.at("ranks").size(), 2u);
  EXPECT_EQ(j.at("files").at(1).at("rank"), 1);
  EXPECT_EQ(j.at("counts").at("ok"), 3);
}

TEST(BatchMerge, SingleProcessReportHasNoRankFields) {
  BatchReport r;
  r.files.resize(1);
  const json j = json::parse(batch_report_json(r));
  EXPECT_FALSE(j.contains("ranks"));
  EXPECT_FALSE(j.at("files").at(0).contains("rank"));
}

}  // namespace
}  // namespace tf::test
