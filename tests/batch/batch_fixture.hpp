// Helpers for the batch suite: generated folders, the CLI as a child process, file checks.
#pragma once
#include <sys/resource.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "test_support.hpp"
#include "tilefilter/batch/batch.hpp"

namespace tf::test {

// The mixed folder: nested images of several formats and sizes (never constant), plus corrupt,
// truncated, empty and non-image files. `images` lists every file with an image extension,
// relative to the root; `broken` those of them that must fail.
struct MixedFolder {
  std::vector<std::string> images, broken, others;
};
MixedFolder make_mixed_folder(const std::string& root, std::uint32_t seed);

// `count` images of `width` x `height` (JPEG and PNG alternating, seeds from `seed`), flat.
std::vector<std::string> make_flat_folder(const std::string& root, int count, int width, int height,
                                          std::uint32_t seed);

// Files under `dir` whose name is a tf::temporary_name_for() name.
std::vector<std::string> temporaries_under(const std::string& dir);
// Regular files under `dir`, relative, sorted; the batch job record (.tilefilter-batch.json) left out.
std::vector<std::string> files_under(const std::string& dir);

// The CLI as a child process (stdout and stderr to `log`); wait_cli returns the exit code, or
// 128 + signal, and the child's resource usage.
pid_t spawn_cli(const std::vector<std::string>& args, const std::string& log,
                const std::vector<std::string>& extra_env = {});
int wait_cli(pid_t pid, struct rusage* usage = nullptr);
// Any program (argv[0] a path, not searched in PATH), as spawn_cli.
pid_t spawn_program(std::vector<std::string> argv, const std::string& log,
                    const std::vector<std::string>& extra_env = {});
std::string read_text(const std::string& path);

// Shell-quoted arguments for run_cli.
std::string quoted(const std::string& s);

// A filter chain that takes some time on the CPU but stays cheap in CI.
inline const char* kBatchFilter = "gaussian:sigma=1.5,radius=4";

}  // namespace tf::test
