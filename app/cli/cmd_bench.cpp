// tilefilter bench (placeholder until its issue lands).
#include "commands.hpp"
#include "tilefilter/error.hpp"

namespace tf::cli {
void add_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "not implemented yet");
  cmd->callback([] { throw Error(ErrorKind::Internal, "bench is not implemented yet"); });
}
}  // namespace tf::cli
