#include "preset_files.hpp"

#include <QDir>
#include <QFile>

#include <fmt/format.h>

#include "tilefilter/util/error.hpp"

namespace tf::gui {

Preset read_preset(const QString& path) {
  QFile file(path);  // QFile, not core's load_preset: bundled presets live in the resources
  if (!file.open(QIODevice::ReadOnly))
    throw Error(ErrorKind::Io,
                fmt::format("{}: cannot open preset ({})", path.toStdString(), file.errorString().toStdString()));
  if (file.size() > (4 << 20))
    throw Error(ErrorKind::Limit, fmt::format("{}: preset larger than 4 MiB", path.toStdString()));
  const QByteArray bytes = file.readAll();
  return preset_from_json(std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())),
                          path.toStdString());
}

void write_preset(const QString& path, const Preset& preset) { save_preset(path.toStdString(), preset); }

QStringList bundled_presets() {
  QStringList out;
  const QDir dir(":/presets");
  for (const QString& name : dir.entryList({"*.json"}, QDir::Files, QDir::Name)) out << dir.filePath(name);
  return out;
}

}  // namespace tf::gui
