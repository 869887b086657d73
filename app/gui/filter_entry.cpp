#include "filter_entry.hpp"

#include <QJsonArray>
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tilefilter/error.hpp"

namespace tf::gui {

namespace {

using Kind = ParamInfo::Kind;

std::string number_text(double v) { return fmt::format("{:.6g}", v); }

bool is_numeric(Kind k) { return k == Kind::Number || k == Kind::Integer || k == Kind::Bool; }

Error bad(const std::string& why) { return Error(ErrorKind::InvalidArgument, why); }

}  // namespace

const FilterInfo* find_filter(const std::string& name) {
  for (const auto& f : filter_catalog())
    if (f.name == name) return &f;
  return nullptr;
}

FilterEntry default_entry(const FilterInfo& info) {
  FilterEntry e;
  e.filter = info.name;
  for (const auto& p : info.params) {
    if (is_numeric(p.kind)) e.numbers[p.name] = p.default_value;
    else if (p.kind == Kind::Choice) e.texts[p.name] = p.default_text;
  }
  if (e.is_custom()) {
    // A 3x3 box blur is a more useful start than an identity that visibly does nothing.
    e.kernel = KernelGrid{3, 3, std::vector<double>(9, 1.0)};
    e.numbers["normalize"] = 1;
  }
  return e;
}

std::string to_spec(const FilterEntry& e) {
  const FilterInfo* info = find_filter(e.filter);
  if (!info) throw bad(fmt::format("unknown filter '{}'", e.filter));
  std::vector<std::string> items;
  for (const auto& p : info->params) {
    if (p.kind == Kind::Path) {
      if (e.is_custom()) items.push_back(p.name + "=" + kernel_file_for(e.kernel).toStdString());
      continue;
    }
    if (p.kind == Kind::Choice) {
      auto it = e.texts.find(p.name);
      if (it != e.texts.end() && it->second != p.default_text) items.push_back(p.name + "=" + it->second);
      continue;
    }
    auto it = e.numbers.find(p.name);
    if (it == e.numbers.end()) continue;
    if (p.kind == Kind::Bool) {
      if ((it->second != 0) != (p.default_value != 0)) items.push_back(p.name + (it->second != 0 ? "=true" : "=false"));
    } else if (it->second != p.default_value) {
      items.push_back(p.name + "=" + number_text(it->second));
    }
  }
  std::string spec = e.filter;
  for (std::size_t i = 0; i < items.size(); ++i) spec += (i ? "," : ":") + items[i];
  return spec;
}

std::vector<std::string> to_specs(const std::vector<FilterEntry>& chain) {
  std::vector<std::string> specs;
  for (const auto& e : chain) specs.push_back(to_spec(e));
  return specs;
}

FilterEntry entry_from_spec(const std::string& spec) {
  parse_filter_spec(spec);  // core's own validation and messages
  const auto colon = spec.find(':');
  const FilterInfo* info = find_filter(spec.substr(0, colon));
  FilterEntry e = default_entry(*info);
  if (colon == std::string::npos) return e;
  std::string rest = spec.substr(colon + 1);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string item = rest.substr(0, comma);
    rest = comma == std::string::npos ? std::string{} : rest.substr(comma + 1);
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    const auto p =
        std::find_if(info->params.begin(), info->params.end(), [&](const ParamInfo& q) { return q.name == key; });
    switch (p->kind) {
      case Kind::Path: e.kernel = KernelGrid::from_kernel(load_kernel_file(value)); break;
      case Kind::Choice: e.texts[key] = value; break;
      case Kind::Bool: e.numbers[key] = (value == "true" || value == "1" || value == "yes") ? 1 : 0; break;
      default: e.numbers[key] = std::stod(value); break;
    }
  }
  return e;
}

QString entry_label(const FilterEntry& e) {
  QString label = QString::fromStdString(e.filter);
  const FilterInfo* info = find_filter(e.filter);
  if (!info) return label;
  QStringList parts;
  for (const auto& p : info->params) {
    if (p.kind == Kind::Choice) {
      auto it = e.texts.find(p.name);
      if (it != e.texts.end()) parts << QString::fromStdString(it->second);
    } else if (p.kind == Kind::Bool) {
      auto it = e.numbers.find(p.name);
      if (it != e.numbers.end() && it->second != 0) parts << QString::fromStdString(p.name);
    } else if (p.kind != Kind::Path) {
      auto it = e.numbers.find(p.name);
      if (it != e.numbers.end())
        parts << QStringLiteral("%1 %2").arg(QString::fromStdString(p.name)).arg(it->second, 0, 'g', 4);
    }
  }
  if (e.is_custom()) parts.prepend(QStringLiteral("%1×%2").arg(e.kernel.width).arg(e.kernel.height));
  if (!parts.isEmpty()) label += QStringLiteral("  ·  ") + parts.join(QStringLiteral(", "));
  return label;
}

QJsonObject to_json(const FilterEntry& e) {
  QJsonObject o;
  o["filter"] = QString::fromStdString(e.filter);
  QJsonObject params;
  const FilterInfo* info = find_filter(e.filter);
  for (const auto& [k, v] : e.numbers) {
    const ParamInfo* p = nullptr;
    if (info)
      for (const auto& q : info->params)
        if (q.name == k) p = &q;
    if (p && p->kind == Kind::Bool) params[QString::fromStdString(k)] = v != 0;
    else params[QString::fromStdString(k)] = v;
  }
  for (const auto& [k, v] : e.texts) params[QString::fromStdString(k)] = QString::fromStdString(v);
  if (!params.isEmpty()) o["params"] = params;
  if (e.is_custom()) {
    QJsonArray rows;
    for (int y = 0; y < e.kernel.height; ++y) {
      QJsonArray row;
      for (int x = 0; x < e.kernel.width; ++x) row.append(e.kernel.at(x, y));
      rows.append(row);
    }
    o["kernel"] = rows;
  }
  return o;
}

FilterEntry entry_from_json(const QJsonObject& o) {
  const std::string name = o.value("filter").toString().toStdString();
  const FilterInfo* info = find_filter(name);
  if (!info) throw bad(fmt::format("unknown filter '{}'", name));
  FilterEntry e = default_entry(*info);
  const QJsonObject params = o.value("params").toObject();
  for (auto it = params.begin(); it != params.end(); ++it) {
    const std::string key = it.key().toStdString();
    const auto p =
        std::find_if(info->params.begin(), info->params.end(), [&](const ParamInfo& q) { return q.name == key; });
    if (p == info->params.end()) throw bad(fmt::format("{}: unknown parameter '{}'", name, key));
    if (p->kind == Kind::Choice) {
      const std::string v = it.value().toString().toStdString();
      if (std::find(p->choices.begin(), p->choices.end(), v) == p->choices.end())
        throw bad(fmt::format("{}: {}={} is not one of {}", name, key, v, fmt::join(p->choices, "|")));
      e.texts[key] = v;
    } else if (p->kind == Kind::Bool) {
      e.numbers[key] = it.value().toBool() ? 1 : 0;
    } else if (p->kind != Kind::Path) {
      if (!it.value().isDouble()) throw bad(fmt::format("{}: {} is not a number", name, key));
      const double v = it.value().toDouble();
      if (v < p->min || v > p->max || (p->kind == Kind::Integer && v != std::floor(v)))
        throw bad(fmt::format("{}: {}={} is out of range [{}, {}]", name, key, v, p->min, p->max));
      e.numbers[key] = v;
    }
  }
  if (e.is_custom()) {
    const QJsonArray rows = o.value("kernel").toArray();
    std::vector<std::vector<double>> taps;
    for (const auto& row : rows) {
      std::vector<double> r;
      for (const auto& v : row.toArray()) r.push_back(v.toDouble());
      if (!taps.empty() && r.size() != taps[0].size()) throw bad("custom: kernel rows differ in length");
      taps.push_back(std::move(r));
    }
    if (taps.empty() || taps[0].empty()) throw bad("custom: the preset holds no kernel");
    if (taps.size() > kMaxKernelSide || taps[0].size() > kMaxKernelSide)
      throw bad(fmt::format("custom: kernel larger than {}x{}", kMaxKernelSide, kMaxKernelSide));
    e.kernel = KernelGrid::from_kernel(Kernel::from_rows(taps));
    for (std::size_t y = 0; y < taps.size(); ++y)  // keep the double taps, not the float copy
      for (std::size_t x = 0; x < taps[y].size(); ++x) e.kernel.taps[y * taps[y].size() + x] = taps[y][x];
  }
  return e;
}

}  // namespace tf::gui
