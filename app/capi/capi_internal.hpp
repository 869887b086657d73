// What the C API's source files share (not installed): what a tf_chain holds, the one place C++ errors
// become a tf_status and the thread's message, and the hooks between the files.
#pragma once
#include <new>
#include <string>
#include <vector>

#include "tilefilter/filters/filter.hpp"
#include "tilefilter/image/border.hpp"
#include "tilefilter/tilefilter.h"
#include "tilefilter/util/error.hpp"

struct tf_chain {
  tf::Chain chain;
  std::vector<std::string> specs;
  std::string border_name = "reflect101";
  tf::Border border;
  // Per stage, how tf_chain_new_stages was given it (empty for chains made from specs alone).
  enum class Given : char { Spec, Kernel2D, SeparablePair };
  std::vector<Given> given;
};

namespace tf {
struct BatchOptions;
}

namespace tf::capi {

inline thread_local std::string t_error;  // tf_last_error()

inline tf_status status_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return TF_ERR_INVALID_ARGUMENT;
    case ErrorKind::Io: return TF_ERR_IO;
    case ErrorKind::Decode: return TF_ERR_DECODE;
    case ErrorKind::Limit: return TF_ERR_LIMIT;
    case ErrorKind::Device: return TF_ERR_DEVICE;
    case ErrorKind::Cancelled: return TF_ERR_CANCELLED;
    case ErrorKind::Internal: return TF_ERR_INTERNAL;
  }
  return TF_ERR_INTERNAL;
}

// The one place C++ errors become C ones.
template <class F> tf_status guarded(F&& f) noexcept {
  t_error.clear();
  try {
    f();
    return TF_OK;
  } catch (const Error& e) {
    t_error = e.what();
    if (t_error == "this build has no GPU backend") return TF_ERR_NO_GPU_BACKEND;
    return status_of(e.kind());
  } catch (const std::bad_alloc&) {
    t_error = "out of memory";
    return TF_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    t_error = e.what();
    return TF_ERR_INTERNAL;
  } catch (...) {
    t_error = "unknown error";
    return TF_ERR_INTERNAL;
  }
}

// <prefix>/share/tilefilter/WHAT beside the library, else the source tree's resources/WHAT (capi_presets.cpp).
std::string bundled_folder(const std::string& what);
// The bundled presets' files (*.json in bundled_folder("presets")), sorted.
std::vector<std::string> bundled_preset_files();
// Gives a batch the progress callback and stop flag of the calling thread's tf_batch_with_progress
// (capi_progress.cpp); nothing for a plain tf_batch.
void apply_batch_progress(BatchOptions& options);

}  // namespace tf::capi
