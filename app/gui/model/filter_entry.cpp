#include "filter_entry.hpp"

#include <QObject>
#include <QStringList>

namespace tf::gui {

using Kind = ParamInfo::Kind;

bool zero_means_auto(const ParamInfo& p) {
  return p.kind == Kind::Integer && p.min == 0 && p.help.find("0 = ") != std::string::npos;
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
        parts << QStringLiteral("%1 %2").arg(QString::fromStdString(p.name), it->second == 0 && zero_means_auto(p)
                                                                                 ? QObject::tr("auto")
                                                                                 : QString::number(it->second, 'g', 4));
    }
  }
  if (e.is_custom()) parts.prepend(QStringLiteral("%1×%2").arg(e.kernel.width).arg(e.kernel.height));
  if (!parts.isEmpty()) label += QStringLiteral("  ·  ") + parts.join(QStringLiteral(", "));
  return label;
}

}  // namespace tf::gui
