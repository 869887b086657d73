// Files replaced whole or not at all: written as an unnamed file in the target's folder and given
// the target's name when complete (Linux O_TMPFILE), or where the file system makes no unnamed files,
// written under a temporary name beside the target and renamed.
#pragma once
#include <cstdio>
#include <span>
#include <string>

namespace tf {

// A fresh temporary name beside `path` (same directory, hidden, unique per process and call).
std::string temporary_name_for(const std::string& path);

// A file that appears under its target's name only when committed, whole: readers see the old file
// or the whole new one, never a part (batch's kill -9 rule). Unnamed (O_TMPFILE) where the file system
// allows: it vanishes if the process dies first, and a new name costs the folder one operation (a
// temporary file's creation and rename take two, each holding the folder's lock). Naming::Named, for
// libraries that open the file by its path (libtiff), and file systems without unnamed files write
// under temporary_name_for(target) and rename.
class AtomicFile {
 public:
  enum class Naming { Unnamed, Named };
  // Opens the file (mode 0666 less the umask); throws tf::Error (Io) naming the target.
  explicit AtomicFile(std::string target, Naming naming = Naming::Unnamed);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // removes the file unless committed

  std::FILE* stream() const { return file_; }
  const std::string& temp_path() const { return temp_; }  // empty for an unnamed file
  const std::string& target() const { return target_; }
  // Closes the stream and gives the file the target's name (over an existing file: a temporary name,
  // then a rename). Throws tf::Error (Io) naming the target; nothing is left then.
  void commit();

 private:
  std::string target_, temp_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

// Writes `bytes` through an AtomicFile onto `path`. Throws tf::Error (Io) naming `path` and the
// reason; nothing is left behind then.
void write_file_atomically(const std::string& path, std::span<const unsigned char> bytes);

}  // namespace tf
