#include "atomic_file.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "tilefilter/util/atomic_write.hpp"
#include "tilefilter/util/error.hpp"

namespace fs = std::filesystem;

namespace tf {

namespace io {

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

void AtomicFile::commit(bool closed) {
  const bool unnamed = temp_.empty();
  if (closed && unnamed)
    throw Error(ErrorKind::Internal, fmt::format("{}: an unnamed file closed before its name", target_));
  committed_ = true;
  bool ok = true;
  int error = 0;
  if (!closed && file_ && std::fflush(file_) != 0) ok = false, error = errno;
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
  if (!closed && file_ && std::fclose(file_) != 0 && ok) ok = false, error = errno;
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

}  // namespace io

}  // namespace tf
