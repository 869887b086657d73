#include "kernel_store.hpp"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QSaveFile>
#include <QStandardPaths>

#include <fmt/format.h>

#include "tilefilter/error.hpp"

namespace tf::gui {

KernelGrid KernelGrid::identity(int width, int height) {
  KernelGrid g;
  g.width = width;
  g.height = height;
  g.taps.assign(static_cast<std::size_t>(width) * height, 0.0);
  g.taps[static_cast<std::size_t>(height / 2) * width + width / 2] = 1.0;
  return g;
}

KernelGrid KernelGrid::from_kernel(const Kernel& kernel) {
  KernelGrid g;
  g.width = kernel.width;
  g.height = kernel.height;
  g.taps.assign(kernel.taps.begin(), kernel.taps.end());
  return g;
}

void KernelGrid::resize(int new_width, int new_height) {
  std::vector<double> out(static_cast<std::size_t>(new_width) * new_height, 0.0);
  const int dx = (new_width - width) / 2, dy = (new_height - height) / 2;
  for (int y = 0; y < new_height; ++y)
    for (int x = 0; x < new_width; ++x) {
      const int ox = x - dx, oy = y - dy;
      if (ox >= 0 && ox < width && oy >= 0 && oy < height)
        out[static_cast<std::size_t>(y) * new_width + x] = at(ox, oy);
    }
  width = new_width;
  height = new_height;
  taps = std::move(out);
}

double KernelGrid::sum() const {
  double s = 0;
  for (double t : taps) s += t;
  return s;
}

std::string KernelGrid::to_text() const {
  std::string text = fmt::format("# {}x{} kernel written by tilefilter-gui\n", width, height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) text += fmt::format("{}{:.9g}", x ? " " : "", at(x, y));
    text += '\n';
  }
  return text;
}

namespace {
QString& store_dir() {
  static QString dir;
  return dir;
}
}  // namespace

void set_kernel_store_dir(const QString& dir) { store_dir() = dir; }

QString kernel_store_dir() {
  if (!store_dir().isEmpty()) return store_dir();
  QString base = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  // Specs separate parameters with commas, so a path holding one cannot be passed to core.
  if (base.isEmpty() || base.contains(',')) base = QDir::tempPath() + "/tilefilter-gui";
  return base + "/kernels";
}

QString kernel_file_for(const KernelGrid& grid) {
  const std::string text = grid.to_text();
  const QByteArray bytes = QByteArray::fromStdString(text);
  const QString hash = QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha1).toHex().left(16));
  const QString dir = kernel_store_dir();
  const QString path = dir + "/kernel-" + hash + ".txt";
  if (QFile::exists(path)) return path;
  if (!QDir().mkpath(dir))
    throw Error(ErrorKind::Io, fmt::format("{}: cannot create the folder for kernel files", dir.toStdString()));
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit())
    throw Error(ErrorKind::Io,
                fmt::format("{}: cannot write kernel file ({})", path.toStdString(), file.errorString().toStdString()));
  return path;
}

}  // namespace tf::gui
