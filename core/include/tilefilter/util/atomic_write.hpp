// Files replaced whole or not at all: written as an unnamed file in the target's folder and given
// the target's name when complete (Linux O_TMPFILE), or where the file system makes no unnamed files,
// written under a temporary name beside the target and renamed.
#pragma once
#include <span>
#include <string>

namespace tf {

// A fresh temporary name beside `path` (same directory, hidden, unique per process and call).
std::string temporary_name_for(const std::string& path);

// A file open for writing in `path`'s folder with no name (O_TMPFILE): it vanishes if the process
// dies before publish_unnamed(). -1 where the file system makes none (the caller writes under
// temporary_name_for(path) then). Mode 0666 less the umask, as a named file's.
int open_unnamed_beside(const std::string& path);
// Gives the unnamed file `fd` the name `path`: one operation on the folder where `path` is new (a
// named temporary file takes two, its creation and its rename, each holding the folder's lock);
// over an existing file, a temporary name then a rename. Throws tf::Error (Io) naming `path`.
void publish_unnamed(int fd, const std::string& path);

// Writes `bytes` to an unnamed file (else a temporary_name_for(path)) and gives it the name `path`:
// readers see the old file or the whole new one, never a part. Throws tf::Error (Io) naming `path`
// and the reason; nothing is left behind then.
void write_file_atomically(const std::string& path, std::span<const unsigned char> bytes);

}  // namespace tf
