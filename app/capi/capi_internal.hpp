// What the C API's files share (app/capi): the handles behind tf_chain, the one place C++ errors become
// C ones (guarded), argument checks, the device pool and the bundled resources. Only app/capi includes it.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tilefilter/engine/device.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/filters/filter.hpp"
#include "tilefilter/tilefilter.h"

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

// The string a function hands out "until the thread's next call" (tf_devices_json).
std::string& thread_text();
// The calling thread's last error message ("" when none).
const std::string& last_error();

// The status of the exception being handled, its message kept as the thread's last error.
tf_status current_error() noexcept;
void clear_error() noexcept;

// The one place C++ errors become C ones: every entry point runs its body through this.
template <class F> tf_status guarded(F&& f) noexcept {
  clear_error();
  try {
    f();
    return TF_OK;
  } catch (...) {
    return current_error();
  }
}

// Throws tf::Error (InvalidArgument) with `message` unless `ok`.
void require(bool ok, const std::string& message);
// Installs the CUDA backend into core, once per process.
void install_once();

// A caller's image as a view, checked (`what` names it in messages: "input", "output", "rows").
Format format_of(int channels, int type);
ImageView view_of(const tf_image* image, const char* what);
// The job options of `o` (NULL = defaults), the chain's border where `o` names none.
JobOptions job_of(const tf_chain& chain, const tf_options* o);
const char* devices_of(const tf_options* o);
std::size_t memory_of(const tf_options* o);

// Devices are made once per selection and reused: a job on GPUs takes that selection's lock (a
// device runs one job at a time); CPU workers are lent out, one set per concurrent job.
class DevicePool {
 public:
  struct Lease {
    DevicePool* pool = nullptr;
    std::string key;
    std::shared_ptr<DeviceSelection> selection;
    std::unique_lock<std::mutex> gpu_lock;
    Lease() = default;
    Lease(Lease&&) = default;
    ~Lease() {
      if (pool && selection && !gpu_lock.owns_lock()) pool->give(key, std::move(selection));
    }
  };

  // The selection of `spec`, made on first use; a GPU selection is lent with its lock held.
  Lease take(const std::string& spec, std::size_t memory_cap);

 private:
  void give(const std::string& key, std::shared_ptr<DeviceSelection> selection);
  struct Shared {
    std::shared_ptr<DeviceSelection> selection;
    std::unique_ptr<std::mutex> mutex;
  };
  std::mutex mutex_;
  std::map<std::string, std::vector<std::shared_ptr<DeviceSelection>>> free_;
  std::map<std::string, Shared> gpu_;
};

DevicePool& device_pool();

// <prefix>/share/tilefilter/WHAT beside the library, else the source tree's resources/WHAT.
std::string bundled_folder(const std::string& what);
// The bundled presets' files (*.json in bundled_folder("presets")), sorted (capi_presets.cpp).
std::vector<std::string> bundled_preset_files();
// Gives a batch the progress callback and stop flag of the calling thread's tf_batch_with_progress
// (capi_progress.cpp); nothing for a plain tf_batch.
void apply_batch_progress(BatchOptions& options);

}  // namespace tf::capi
