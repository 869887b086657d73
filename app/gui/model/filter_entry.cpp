#include "filter_entry.hpp"

#include <QStringList>

namespace tf::gui {

using Kind = ParamInfo::Kind;

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

}  // namespace tf::gui
