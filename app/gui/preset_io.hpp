// Filter-chain presets as JSON files:
//   {"name": "...", "description": "...", "border": "reflect101", "border_value": 0,
//    "filters": [{"filter": "gaussian", "params": {"sigma": 2}}, {"filter": "custom", "kernel": [[...]]}]}
// Bundled presets live in the resources (":/presets"); users save their own anywhere.
#pragma once
#include <QByteArray>
#include <QString>
#include <QStringList>

#include "filter_entry.hpp"

namespace tf::gui {

struct Preset {
  QString name, description;
  ChainSettings chain;
};

QByteArray preset_to_json(const Preset& preset);
Preset preset_from_json(const QByteArray& json, const QString& origin);  // throws tf::Error
Preset load_preset(const QString& path);                                 // throws tf::Error
void save_preset(const QString& path, const Preset& preset);             // throws tf::Error

QStringList bundled_presets();  // resource paths, sorted

}  // namespace tf::gui
