// libtilefilter.so: the C API of tilefilter/tilefilter.h over core and the CUDA backend. Every entry
// point catches what core throws and turns it into a tf_status and the thread's message (the one
// line the CLI prints for the same error); nothing C++ crosses the boundary. By role: capi_chains.cpp
// (chains and the catalogs), capi_filter.cpp (options, images, filtering), capi_files.cpp (files and
// batches), capi_devices.cpp (the device pool); this file holds the errors and what they share.
#include "capi_internal.hpp"

#include <filesystem>
#include <mutex>
#include <new>
#include <string>

#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/util/error.hpp"

#ifndef TF_VERSION
#define TF_VERSION "0.0.0"
#endif

namespace tf::capi {

namespace {
thread_local std::string t_error;
thread_local std::string t_text;

tf_status status_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return TF_ERR_INVALID_ARGUMENT;
    case ErrorKind::Io: return TF_ERR_IO;
    case ErrorKind::Decode: return TF_ERR_DECODE;
    case ErrorKind::Limit: return TF_ERR_LIMIT;
    case ErrorKind::Device: return TF_ERR_DEVICE;
    case ErrorKind::Cancelled: return TF_ERR_CANCELLED;
    case ErrorKind::Internal: return TF_ERR_INTERNAL;
    case ErrorKind::NoGpuBackend: return TF_ERR_NO_GPU_BACKEND;
  }
  return TF_ERR_INTERNAL;
}

}  // namespace

std::string& thread_text() { return t_text; }
const std::string& last_error() { return t_error; }

void clear_error() noexcept { t_error.clear(); }

tf_status current_error() noexcept {
  try {
    throw;
  } catch (const Error& e) {
    t_error = e.what();
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

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(ErrorKind::InvalidArgument, message);
}

void install_once() {
  static std::once_flag once;
  std::call_once(once, [] { cuda::install_backend(); });
}

}  // namespace tf::capi

using namespace tf;
using namespace tf::capi;

extern "C" {

const char* tf_last_error(void) { return last_error().c_str(); }

const char* tf_version(void) { return TF_VERSION; }

int tf_api_version(void) { return TF_C_API_VERSION; }

}  // extern "C"
