// Files replaced whole or not at all: written under a temporary name beside the target, then renamed.
#pragma once
#include <span>
#include <string>

namespace tf {

// A fresh temporary name beside `path` (same directory, hidden, unique per process and call).
std::string temporary_name_for(const std::string& path);

// Writes `bytes` to a temporary_name_for(path) and renames it onto `path`: readers see the old
// file or the whole new one, never a part. Throws tf::Error (Io) naming `path` and the reason;
// nothing is left behind then.
void write_file_atomically(const std::string& path, std::span<const unsigned char> bytes);

}  // namespace tf
