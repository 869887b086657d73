// A file written unnamed in its target's folder and given the target's name when complete, or where the
// file system makes no unnamed files (and for libraries that open the file by its path: Naming::Named)
// under a temporary name beside the target, renamed onto it: readers see the old file or the whole new
// one, never a part (batch's kill -9 rule). tilefilter/util/atomic_write.hpp has both ways.
#pragma once
#include <cstdio>
#include <string>

namespace tf::io {

class AtomicFile {
 public:
  enum class Naming { Unnamed, Named };
  // Opens the file; throws tf::Error (Io).
  explicit AtomicFile(std::string target, Naming naming = Naming::Unnamed);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // removes the temporary file unless committed

  std::FILE* stream() const { return file_; }
  const std::string& temp_path() const { return temp_; }  // empty for an unnamed file
  const std::string& target() const { return target_; }
  // Closes the stream (a library that closed it already passes closed = true: Named only) and gives
  // the file the target's name. Throws tf::Error (Io) naming the target; nothing is left then.
  void commit(bool closed = false);

 private:
  std::string target_, temp_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

}  // namespace tf::io
