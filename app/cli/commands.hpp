// The subcommands of `tilefilter`. Each registers its options and callback on the CLI11 app.
#pragma once
#include <CLI/CLI.hpp>

namespace tf::cli {

// Exit codes: 0 success, 1 a file or device error, 2 bad usage, 3 a batch where some files failed.
enum class ExitCode : int { Ok = 0, Failed = 1, Usage = 2, Partial = 3 };
constexpr int exit_status(ExitCode code) { return static_cast<int>(code); }

// A subcommand that finishes with something other than success (batch: some files failed) sets
// the code here; main() returns it once the callback is done and everything is destroyed.
int& command_exit_code();

void add_apply(CLI::App& app);
void add_filters(CLI::App& app);
void add_devices(CLI::App& app);
void add_generate(CLI::App& app);
void add_batch(CLI::App& app);
void add_bench(CLI::App& app);
void add_startup(CLI::App& app);

}  // namespace tf::cli
