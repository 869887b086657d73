#include "tilefilter/image/border.hpp"

namespace tf {

std::string to_string(BorderMode m) {
  switch (m) {
    case BorderMode::Reflect101: return "reflect101";
    case BorderMode::Reflect: return "reflect";
    case BorderMode::Replicate: return "replicate";
    case BorderMode::Constant: return "constant";
    case BorderMode::Wrap: return "wrap";
  }
  return "?";
}

std::optional<BorderMode> parse_border_mode(std::string_view name) {
  for (auto m :
       {BorderMode::Reflect101, BorderMode::Reflect, BorderMode::Replicate, BorderMode::Constant, BorderMode::Wrap})
    if (name == to_string(m)) return m;
  if (name == "default") return BorderMode::Reflect101;
  return std::nullopt;
}

const char* border_mode_names() { return "reflect101|reflect|replicate|constant|wrap"; }

}  // namespace tf
