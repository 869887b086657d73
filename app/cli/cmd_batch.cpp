// tilefilter batch (placeholder until its issue lands).
#include "commands.hpp"
#include "tilefilter/error.hpp"

namespace tf::cli {
void add_batch(CLI::App& app) {
  auto* cmd = app.add_subcommand("batch", "not implemented yet");
  cmd->callback([] { throw Error(ErrorKind::Internal, "batch is not implemented yet"); });
}
}  // namespace tf::cli
