#include "tilefilter/util/atomic_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "tilefilter/util/error.hpp"

namespace fs = std::filesystem;

namespace tf {

namespace {

void write_all(std::FILE* f, const void* data, std::size_t n, bool& ok) {
  if (n && std::fwrite(data, 1, n, f) != n) ok = false;
}

}  // namespace

std::string temporary_name_for(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  const fs::path p(path);
  return (p.parent_path() / fmt::format(".{}.tf-{}-{}.tmp", p.filename().string(), ::getpid(), counter++)).string();
}

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

void write_file_atomically(const std::string& path, std::span<const unsigned char> bytes) {
  const int fd = open_unnamed_beside(path);
  const std::string tmp = fd >= 0 ? std::string() : temporary_name_for(path);
  std::FILE* f = fd >= 0 ? ::fdopen(fd, "wb") : std::fopen(tmp.c_str(), "wb");
  if (!f) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    throw Error(ErrorKind::Io, fmt::format("{}: cannot write ({})", path, std::strerror(e)));
  }
  bool ok = true;
  write_all(f, bytes.data(), bytes.size(), ok);
  if (std::fflush(f) != 0) ok = false;
  int saved = errno;
  bool published = false;
  if (ok && fd >= 0) {
    try {
      publish_unnamed(fd, path);
    } catch (...) {
      std::fclose(f);
      throw;
    }
    published = true;
  }
  if (std::fclose(f) != 0 && ok) ok = false, saved = errno;
  if (!ok) {  // an unnamed file that never got its name is gone with its descriptor
    if (published) std::remove(path.c_str());
    else if (fd < 0) std::remove(tmp.c_str());
    throw Error(ErrorKind::Io, fmt::format("{}: write failed ({})", path, std::strerror(saved)));
  }
  if (fd < 0 && std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw Error(ErrorKind::Io, fmt::format("{}: cannot rename into place ({})", path, std::strerror(e)));
  }
}

}  // namespace tf
