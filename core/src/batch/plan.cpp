// The batch plan: which files are taken, where each output goes, and the guards that keep a batch
// from writing outside OUT_DIR or over an input.
#include <sys/stat.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "batch_internal.hpp"
#include "tilefilter/util/error.hpp"

namespace fs = std::filesystem;

namespace tf {

namespace batch {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Extensions encode_file can write at all (whether it can write a given pixel format is known only
// after decoding; can_encode decides then).
bool writable_extension(const std::string& ext) {
  static const std::set<std::string> always = {".png", ".jpg", ".jpeg", ".bmp", ".tga", ".hdr"};
  static const std::set<std::string> with_opencv = {".tif", ".tiff", ".webp", ".pfm"};
  return always.count(ext) || (have_opencv_codecs() && with_opencv.count(ext));
}

// The output extension for an input with extension `ext` (original case kept for "same").
std::string output_extension(const std::string& format, const std::string& ext) {
  if (format == "same") return writable_extension(lower(ext)) ? ext : ".png";  // GIF, PSD, PNM: PNG
  if (format == "png") return ".png";
  if (format == "jpg" || format == "jpeg") return ".jpg";
  if (format == "tiff" || format == "tif") return ".tif";
  throw Error(ErrorKind::InvalidArgument, fmt::format("--format '{}': use same, png, jpg or tiff", format));
}

std::string absolute_normal(const std::string& p) {
  std::error_code ec;
  fs::path a = fs::weakly_canonical(fs::absolute(p), ec);
  if (ec) a = fs::absolute(p).lexically_normal();
  std::string s = a.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

struct Walker {
  const BatchOptions& opt;
  std::string in_root, out_root;
  std::vector<std::string> excluded;  // resolved
  BatchPlan& plan;
  struct Found {
    std::string path, relative;  // path: in_root's name and the folders walked, so already absolute_normal
    bool link = false;           // a symbolic link to a file: its absolute_normal name lies elsewhere
  };
  std::vector<Found> files;

  bool is_excluded(const std::string& resolved) const {
    return std::any_of(excluded.begin(), excluded.end(), [&](const std::string& e) { return is_within(resolved, e); });
  }

  void walk(const fs::path& dir, const fs::path& rel) {
    std::error_code ec;
    std::vector<fs::directory_entry> entries;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(*it);
    if (ec) {
      plan.skipped.push_back(
          fmt::format("{}/ (folder cannot be read: {})", rel.empty() ? "." : rel.string(), ec.message()));
      return;
    }
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
    for (const auto& e : entries) {
      const std::string name = e.path().filename().string();
      const fs::path r = rel / name;
      // The listing's own file type answers for every entry but links (where the file system gives
      // it): no call a plain file; a link's target is looked up.
      const bool link = e.is_symlink(ec);
      if (link && !e.exists(ec)) {
        plan.skipped.push_back(fmt::format("{} (broken symbolic link)", r.string()));
      } else if (e.is_directory(ec)) {
        if (!opt.recursive) {
          plan.skipped.push_back(fmt::format("{}/ (folder; add --recursive to take it)", r.string()));
        } else if (link) {
          plan.skipped.push_back(fmt::format("{}/ (symbolic link to a folder, not followed)", r.string()));
        } else if (is_excluded(absolute_normal(e.path().string()))) {
          plan.notes.push_back(fmt::format("{}/ excluded from the walk", r.string()));
        } else {
          walk(e.path(), r);
        }
      } else if (e.is_regular_file(ec)) {
        if (is_temporary_name(name)) continue;  // an unfinished output of some run, never an input
        if (is_image_extension(name)) files.push_back({e.path().string(), r.string(), link});
        else plan.skipped.push_back(fmt::format("{} (not an image)", r.string()));
      } else {
        plan.skipped.push_back(fmt::format("{} (not a regular file)", r.string()));
      }
    }
  }
};

std::pair<dev_t, ino_t> file_id(const std::string& path, bool* ok, std::size_t* bytes = nullptr) {
  struct stat st {};
  *ok = ::stat(path.c_str(), &st) == 0;
  if (bytes) *bytes = *ok ? static_cast<std::size_t>(st.st_size) : 0;
  return {st.st_dev, st.st_ino};
}

bool ends_with_bytes(const std::string& path, std::initializer_list<unsigned char> tail, std::size_t slack) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::size_t>(std::max<std::streamoff>(0, in.tellg()));
  const std::size_t window = std::min(size, tail.size() + slack);
  std::string buf(window, '\0');
  in.seekg(static_cast<std::streamoff>(size - window));
  in.read(buf.data(), static_cast<std::streamsize>(window));
  if (!in) return false;
  const std::string want(tail.begin(), tail.end());
  return buf.find(want) != std::string::npos;
}

}  // namespace

bool is_within(const std::string& child, const std::string& parent) {
  if (parent == "/") return !child.empty() && child.front() == '/';
  return child == parent ||
         (child.size() > parent.size() && child.compare(0, parent.size(), parent) == 0 && child[parent.size()] == '/');
}

bool resolves_within(const std::string& dir, const std::string& root) { return is_within(absolute_normal(dir), root); }

bool is_temporary_name(const std::string& filename, long* pid) {
  // ".NAME.tf-PID-N.tmp"
  if (filename.size() < 12 || filename.front() != '.' || !filename.ends_with(".tmp")) return false;
  const auto tf_pos = filename.rfind(".tf-");
  if (tf_pos == std::string::npos || tf_pos == 0) return false;
  const std::string rest = filename.substr(tf_pos + 4, filename.size() - 4 - (tf_pos + 4));  // "PID-N"
  const auto dash = rest.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == rest.size()) return false;
  for (std::size_t i = 0; i < rest.size(); ++i)
    if (i != dash && !std::isdigit(static_cast<unsigned char>(rest[i]))) return false;
  if (pid) *pid = std::stol(rest.substr(0, dash));
  return true;
}

int remove_stale_temporaries(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  int removed = 0;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    long pid = 0;
    if (!it->is_regular_file(ec) || !is_temporary_name(it->path().filename().string(), &pid)) continue;
    // A live process may still be writing it (another batch into the same folder): leave it.
    const bool alive = pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
    if (!alive && fs::remove(it->path(), ec)) ++removed;
  }
  return removed;
}

bool output_is_complete(const std::string& path, const std::string& input) {
  std::error_code ec;
  const auto st = fs::symlink_status(path, ec);
  if (ec || !fs::is_regular_file(st)) return false;
  if (fs::file_size(path, ec) == 0 || ec) return false;
  const auto t_out = fs::last_write_time(path, ec);
  const auto t_in = fs::last_write_time(input, ec);
  if (!ec && t_out < t_in) return false;  // the input changed since
  const std::string ext = lower(fs::path(path).extension().string());
  // Our outputs are renamed into place only when complete; these markers also catch a file cut
  // short by something else.
  if (ext == ".png") return ends_with_bytes(path, {'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82}, 0);
  if (ext == ".jpg" || ext == ".jpeg") return ends_with_bytes(path, {0xFF, 0xD9}, 16);
  return true;
}

}  // namespace batch

BatchPlan plan_batch(const BatchOptions& opt) {
  using namespace batch;
  if (opt.input_dir.empty()) throw Error(ErrorKind::InvalidArgument, "no input folder given");
  if (opt.output_dir.empty()) throw Error(ErrorKind::InvalidArgument, "no output folder given");
  std::error_code ec;
  if (!fs::exists(opt.input_dir, ec)) throw Error(ErrorKind::Io, fmt::format("{}: no such folder", opt.input_dir));
  if (!fs::is_directory(opt.input_dir, ec))
    throw Error(ErrorKind::Io, fmt::format("{}: is not a folder", opt.input_dir));
  if (fs::exists(opt.output_dir, ec) && !fs::is_directory(opt.output_dir, ec))
    throw Error(ErrorKind::Io, fmt::format("{}: exists and is not a folder", opt.output_dir));
  if (opt.format == "tiff" || opt.format == "tif") {
    if (!have_opencv_codecs())
      throw Error(ErrorKind::InvalidArgument, "--format tiff: this build has no TIFF writer (needs OpenCV)");
  } else {
    output_extension(opt.format, ".png");  // validates the name
  }

  BatchPlan plan;
  Walker w{opt, absolute_normal(opt.input_dir), absolute_normal(opt.output_dir), {}, plan, {}};
  for (const auto& e : opt.exclude) w.excluded.push_back(absolute_normal(e));
  if (w.out_root == w.in_root)
    throw Error(
        ErrorKind::InvalidArgument,
        fmt::format(
            "{}: the output folder is the input folder; outputs would replace the inputs. Choose another folder",
            opt.output_dir));
  if (opt.recursive && is_within(w.out_root, w.in_root) && !w.is_excluded(w.out_root))
    throw Error(
        ErrorKind::InvalidArgument,
        fmt::format("{} lies inside {} and --recursive would walk into it: add --exclude {} or choose another folder",
                    opt.output_dir, opt.input_dir, opt.output_dir));
  w.walk(w.in_root, {});

  // Output names mirror the input tree. When two inputs map to one name (a.jpg and a.png with
  // --format png), the one already in that format keeps it; the other becomes "a.jpg.png".
  std::map<std::string, int> owner;  // output path -> item
  plan.items.resize(w.files.size());
  std::vector<fs::path> wanted(w.files.size());
  // Never write over an input, by name or by inode: the inputs' names and ids, one stat a file (its
  // size too); a name is resolved (absolute_normal: a call a path component) only for links. The plan
  // runs before the devices start: a plain file takes 2 calls, this stat and its output's.
  std::set<std::string> input_names;
  std::set<std::pair<dev_t, ino_t>> input_ids;
  for (std::size_t i = 0; i < w.files.size(); ++i) {
    const Walker::Found& found = w.files[i];
    const fs::path rel(found.relative);
    fs::path out = rel;
    out.replace_extension(output_extension(opt.format, rel.extension().string()));
    wanted[i] = fs::path(w.out_root) / out;
    auto& item = plan.items[i];
    item.input = found.path;
    item.relative = found.relative;
    bool ok = false;
    const auto id = file_id(item.input, &ok, &item.input_bytes);
    if (ok) input_ids.insert(id);
    input_names.insert(found.link ? absolute_normal(item.input) : item.input);
  }
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < w.files.size(); ++i) {
      const bool keeps_ext =
          lower(wanted[i].extension().string()) == lower(fs::path(w.files[i].relative).extension().string());
      if ((pass == 0) != keeps_ext) continue;
      std::string out = wanted[i].string();
      if (owner.count(out))
        out = (fs::path(w.out_root) / (w.files[i].relative + wanted[i].extension().string())).string();
      for (int n = 2; owner.count(out); ++n)
        out = (fs::path(w.out_root) / fmt::format("{}.{}{}", w.files[i].relative, n, wanted[i].extension().string()))
                  .string();
      owner[out] = static_cast<int>(i);
      plan.items[i].output = out;
    }

  // Per output: not an input (by name or inode), and not written through a link that leads out of
  // OUT_DIR. Each output folder is resolved once; an output's own name is its folder's and its file
  // name unless it is a symbolic link already there.
  struct Folder {
    std::string name;  // absolute_normal
    bool within = false;
  };
  std::map<std::string, Folder> folders;
  for (auto& item : plan.items) {
    bool exists = false;
    const auto id = file_id(item.output, &exists);
    const fs::path out(item.output);
    auto [folder, fresh] = folders.try_emplace(out.parent_path().string());
    if (fresh) {
      folder->second.name = absolute_normal(folder->first);
      folder->second.within = is_within(folder->second.name, w.out_root);
    }
    const std::string name = exists && fs::is_symlink(fs::symlink_status(out, ec))
                                 ? absolute_normal(item.output)
                                 : (fs::path(folder->second.name) / out.filename()).string();
    if (input_names.count(name) || (exists && input_ids.count(id))) {
      item.problem = fmt::format("output {} would overwrite an input file; refusing", item.output);
    } else if (!folder->second.within) {
      item.problem = fmt::format("output {} would be written outside {} (through a symbolic link); refusing",
                                 item.output, opt.output_dir);
    } else if (opt.resume) {
      item.complete = output_is_complete(item.output, item.input);
    }
  }
  return plan;
}

}  // namespace tf
