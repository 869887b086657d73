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

AtomicFile::AtomicFile(std::string target) : target_(std::move(target)), temp_(temporary_name_for(target_)) {
  file_ = std::fopen(temp_.c_str(), "wb");
  if (!file_) throw Error(ErrorKind::Io, fmt::format("{}: cannot write ({})", target_, std::strerror(errno)));
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (file_) std::fclose(file_);
  std::remove(temp_.c_str());
}

void AtomicFile::commit(bool closed) {
  bool ok = true;
  int error = 0;
  if (!closed && file_) {
    if (std::fflush(file_) != 0) ok = false, error = errno;
    if (std::fclose(file_) != 0 && ok) ok = false, error = errno;
  }
  file_ = nullptr;
  if (!ok) {
    std::remove(temp_.c_str());
    committed_ = true;
    throw Error(ErrorKind::Io, fmt::format("{}: write failed ({})", target_, std::strerror(error)));
  }
  if (std::rename(temp_.c_str(), target_.c_str()) != 0) {
    error = errno;
    std::remove(temp_.c_str());
    committed_ = true;
    throw Error(ErrorKind::Io, fmt::format("{}: cannot rename into place ({})", target_, std::strerror(error)));
  }
  committed_ = true;
}

}  // namespace io

}  // namespace tf
