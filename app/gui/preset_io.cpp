#include "preset_io.hpp"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

#include <fmt/format.h>

#include "tilefilter/error.hpp"

namespace tf::gui {

QByteArray preset_to_json(const Preset& preset) {
  QJsonObject o;
  o["name"] = preset.name;
  if (!preset.description.isEmpty()) o["description"] = preset.description;
  o["border"] = QString::fromStdString(to_string(preset.chain.border.mode));
  if (preset.chain.border.mode == BorderMode::Constant) o["border_value"] = preset.chain.border.value;
  QJsonArray filters;
  for (const auto& e : preset.chain.filters) filters.append(to_json(e));
  o["filters"] = filters;
  return QJsonDocument(o).toJson(QJsonDocument::Indented);
}

Preset preset_from_json(const QByteArray& json, const QString& origin) {
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
  const std::string where = origin.toStdString();
  if (err.error != QJsonParseError::NoError)
    throw Error(ErrorKind::InvalidArgument, fmt::format("{}: not valid JSON ({} at offset {})", where,
                                                        err.errorString().toStdString(), err.offset));
  if (!doc.isObject()) throw Error(ErrorKind::InvalidArgument, fmt::format("{}: a preset is a JSON object", where));
  const QJsonObject o = doc.object();
  Preset p;
  p.name = o.value("name").toString(QFileInfo(origin).completeBaseName());
  p.description = o.value("description").toString();
  const std::string border = o.value("border").toString("reflect101").toStdString();
  const auto mode = parse_border_mode(border);
  if (!mode)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("{}: border '{}' is not one of {}", where, border, border_mode_names()));
  p.chain.border = {*mode, static_cast<float>(o.value("border_value").toDouble(0))};
  const QJsonArray filters = o.value("filters").toArray();
  if (filters.isEmpty()) throw Error(ErrorKind::InvalidArgument, fmt::format("{}: the preset has no filters", where));
  if (static_cast<std::size_t>(filters.size()) > kMaxChainLength)
    throw Error(ErrorKind::Limit, fmt::format("{}: more than {} filters", where, kMaxChainLength));
  for (const auto& f : filters) {
    try {
      p.chain.filters.push_back(entry_from_json(f.toObject()));
    } catch (const Error& e) {
      throw Error(e.kind(), fmt::format("{}: {}", where, e.what()));
    }
  }
  return p;
}

Preset load_preset(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly))
    throw Error(ErrorKind::Io,
                fmt::format("{}: cannot open preset ({})", path.toStdString(), file.errorString().toStdString()));
  if (file.size() > (4 << 20))
    throw Error(ErrorKind::Limit, fmt::format("{}: preset larger than 4 MiB", path.toStdString()));
  return preset_from_json(file.readAll(), path);
}

void save_preset(const QString& path, const Preset& preset) {
  QSaveFile file(path);
  const QByteArray bytes = preset_to_json(preset);
  if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit())
    throw Error(ErrorKind::Io,
                fmt::format("{}: cannot write preset ({})", path.toStdString(), file.errorString().toStdString()));
}

QStringList bundled_presets() {
  QStringList out;
  const QDir dir(":/presets");
  for (const QString& name : dir.entryList({"*.json"}, QDir::Files, QDir::Name)) out << dir.filePath(name);
  return out;
}

}  // namespace tf::gui
