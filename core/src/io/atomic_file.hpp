// A file written under a temporary name beside its target and renamed onto it when complete:
// readers see the old file or the whole new one, never a part (batch's kill -9 rule).
#pragma once
#include <cstdio>
#include <string>

namespace tf::io {

class AtomicFile {
 public:
  explicit AtomicFile(std::string target);  // opens the temporary file; throws tf::Error (Io)
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // removes the temporary file unless committed

  std::FILE* stream() const { return file_; }
  const std::string& temp_path() const { return temp_; }
  const std::string& target() const { return target_; }
  // Closes the stream (a library that closed it already passes closed = true) and renames the
  // temporary file onto the target. Throws tf::Error (Io) naming the target; nothing is left then.
  void commit(bool closed = false);

 private:
  std::string target_, temp_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

}  // namespace tf::io
