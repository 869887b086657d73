// The subcommands of `tilefilter`. Each registers its options and callback on the CLI11 app.
#pragma once
#include <CLI/CLI.hpp>

namespace tf::cli {

// Exit codes: 0 success, 1 a file or device error, 2 bad usage, 3 a batch where some files failed.
enum ExitCode { kOk = 0, kFailed = 1, kUsage = 2, kPartial = 3 };

// A subcommand that finishes with something other than success (batch: some files failed) sets
// the code here; main() returns it once the callback is done and everything is destroyed.
int& command_exit_code();

void add_apply(CLI::App& app);
void add_filters(CLI::App& app);
void add_devices(CLI::App& app);
void add_generate(CLI::App& app);
void add_batch(CLI::App& app);
void add_bench(CLI::App& app);

}  // namespace tf::cli
