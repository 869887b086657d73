// tf_batch_with_progress: tf_batch with a callback after each file, through a hook that tf_batch asks
// (apply_batch_progress) so that one function builds a batch's options.
#include <atomic>

#include "capi_internal.hpp"
#include "tilefilter/batch/batch.hpp"

namespace {

struct ProgressHook {
  tf_progress_fn fn = nullptr;
  void* user = nullptr;
  std::atomic<bool>* stop = nullptr;
};
thread_local ProgressHook t_hook;

}  // namespace

namespace tf::capi {

void apply_batch_progress(BatchOptions& options) {
  if (!t_hook.fn) return;
  const ProgressHook hook = t_hook;
  options.cancel = hook.stop;
  options.progress = [hook](const BatchProgress& p) {
    const tf_batch_progress c{p.files_done, p.files_total, p.files_failed, p.megapixels_done, p.elapsed_s};
    if (hook.fn(&c, hook.user) != 0) hook.stop->store(true);
  };
}

}  // namespace tf::capi

extern "C" tf_status tf_batch_with_progress(const tf_chain* chain, const char* input_dir, const char* output_dir,
                                            const tf_options* options, const char* format, int recursive, int resume,
                                            const char* report_json, tf_batch_result* result, tf_progress_fn progress,
                                            void* user) {
  std::atomic<bool> stop{false};
  t_hook = {progress, user, &stop};
  const tf_status status =
      tf_batch(chain, input_dir, output_dir, options, format, recursive, resume, report_json, result);
  t_hook = {};
  return status;
}
