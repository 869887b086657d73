// Placeholder until the batch pipeline lands (issue: batch folder processing).
#include "tilefilter/batch.hpp"

#include "tilefilter/error.hpp"

namespace tf {
int BatchReport::failed() const {
  int n = 0;
  for (const auto& f : files) n += f.status == FileResult::Status::Failed;
  return n;
}
int BatchReport::exit_code() const { return failed() ? 3 : 0; }
BatchReport run_batch(const BatchOptions&) { throw Error(ErrorKind::Internal, "batch processing is not implemented yet"); }
std::string batch_report_json(const BatchReport&) { return "{}"; }
}  // namespace tf
