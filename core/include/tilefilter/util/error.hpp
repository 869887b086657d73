// One error type for everything that can go wrong with a file, a parameter or a device. The message
// is meant for a person: it names the thing (file, filter, device) and the reason.
#pragma once
#include <stdexcept>
#include <string>

namespace tf {

// NoGpuBackend: device memory was given to a build without CUDA (the C API's TF_ERR_NO_GPU_BACKEND).
// New kinds go at the end: batch_mpi sends a kind between processes as its number.
enum class ErrorKind { InvalidArgument, Io, Decode, Limit, Device, Cancelled, Internal, NoGpuBackend };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace tf
