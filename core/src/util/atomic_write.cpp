#include "tilefilter/util/atomic_write.hpp"

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

void write_file_atomically(const std::string& path, std::span<const unsigned char> bytes) {
  const std::string tmp = temporary_name_for(path);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error(ErrorKind::Io, fmt::format("{}: cannot write ({})", path, std::strerror(errno)));
  bool ok = true;
  write_all(f, bytes.data(), bytes.size(), ok);
  if (std::fflush(f) != 0) ok = false;
  const int saved = errno;
  if (std::fclose(f) != 0) ok = false;
  if (!ok) {
    std::remove(tmp.c_str());
    throw Error(ErrorKind::Io, fmt::format("{}: write failed ({})", path, std::strerror(saved)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw Error(ErrorKind::Io, fmt::format("{}: cannot rename into place ({})", path, std::strerror(e)));
  }
}

}  // namespace tf
