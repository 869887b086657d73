// How the GUI names a filter of the chain. The entry itself, its spec and its JSON are core's
// (tilefilter/preset.hpp), shared with the CLI's --preset.
#pragma once
#include <QString>

#include "tilefilter/filters/preset.hpp"

namespace tf::gui {

// 0 stands for a value derived from others ("radius; 0 = ceil(3*sigma)"): shown as "auto".
bool zero_means_auto(const ParamInfo& info);

// "gaussian  ·  sigma 2.5, radius auto" — what the chain list shows.
QString entry_label(const FilterEntry& entry);

}  // namespace tf::gui
