#include "tilefilter/util/atomic_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "tilefilter/util/error.hpp"

namespace fs = std::filesystem;

namespace tf {

namespace {

// An unnamed file open for writing in `path`'s folder, or -1 where the file system makes none.
int open_unnamed_beside(const std::string& path) {
#ifdef O_TMPFILE
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  const int fd = ::open(folder.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  return fd >= 0 ? fd : -1;
#else
  (void)path;
  return -1;
#endif
}

// Gives the unnamed file `fd` the name `path`. Throws tf::Error (Io) naming `path`.
void publish_unnamed(int fd, const std::string& path) {
  const std::string self = fmt::format("/proc/self/fd/{}", fd);
  auto link_as = [&](const std::string& name) {
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0) return 0;
    if (errno == ENOENT && ::linkat(fd, "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH) == 0) return 0;  // no /proc
    return errno;
  };
  int e = link_as(path);
  if (e == EEXIST) {  // a link cannot replace a file: a temporary name, then a rename does
    const std::string tmp = temporary_name_for(path);
    e = link_as(tmp);
    if (e == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) {
      e = errno;
      std::remove(tmp.c_str());
    }
  }
  if (e != 0) throw Error(ErrorKind::Io, fmt::format("{}: cannot put the file in place ({})", path, std::strerror(e)));
}

}  // namespace

std::string temporary_name_for(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  const fs::path p(path);
  return (p.parent_path() / fmt::format(".{}.tf-{}-{}.tmp", p.filename().string(), ::getpid(), counter++)).string();
}

AtomicFile::AtomicFile(std::string target, Naming naming) : target_(std::move(target)) {
  const int fd = naming == Naming::Unnamed ? open_unnamed_beside(target_) : -1;
  if (fd >= 0) {
    file_ = ::fdopen(fd, "wb");
    if (!file_) ::close(fd);
  } else {
    temp_ = temporary_name_for(target_);
    file_ = std::fopen(temp_.c_str(), "wb");
  }
  if (!file_) throw Error(ErrorKind::Io, fmt::format("{}: cannot write ({})", target_, std::strerror(errno)));
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (file_) std::fclose(file_);
  if (!temp_.empty()) std::remove(temp_.c_str());
}

void AtomicFile::commit() {
  const bool unnamed = temp_.empty();
  committed_ = true;
  bool ok = true;
  int error = 0;
  if (std::fflush(file_) != 0) ok = false, error = errno;
  bool published = false;
  if (ok && unnamed) {
    try {
      publish_unnamed(::fileno(file_), target_);
    } catch (...) {
      std::fclose(file_);
      file_ = nullptr;
      throw;
    }
    published = true;
  }
  if (std::fclose(file_) != 0 && ok) ok = false, error = errno;
  file_ = nullptr;
  if (!ok) {  // an unnamed file that never got its name is gone with its descriptor
    if (published) std::remove(target_.c_str());
    else if (!unnamed) std::remove(temp_.c_str());
    throw Error(ErrorKind::Io, fmt::format("{}: write failed ({})", target_, std::strerror(error)));
  }
  if (!unnamed && std::rename(temp_.c_str(), target_.c_str()) != 0) {
    error = errno;
    std::remove(temp_.c_str());
    throw Error(ErrorKind::Io, fmt::format("{}: cannot rename into place ({})", target_, std::strerror(error)));
  }
}

void write_file_atomically(const std::string& path, std::span<const unsigned char> bytes) {
  AtomicFile file(path);
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file.stream()) != bytes.size())
    throw Error(ErrorKind::Io, fmt::format("{}: write failed ({})", path, std::strerror(errno)));
  file.commit();
}

}  // namespace tf
