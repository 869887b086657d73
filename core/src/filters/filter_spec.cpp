// Parsing of filter specs ("name:key=value,...") and kernel text files.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tilefilter/filters/filter.hpp"
#include "tilefilter/util/error.hpp"
#include "tilefilter/util/nearest_name.hpp"

namespace tf {

Stage build_stage(const std::string& name, const std::map<std::string, double>& num,
                  const std::map<std::string, std::string>& text, const std::string& spec);

namespace {

Error bad_spec(std::string_view spec, const std::string& why) {
  return Error(ErrorKind::InvalidArgument, fmt::format("filter '{}': {}", spec, why));
}

bool parse_number(std::string_view s, double& out) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(out);
}

// What ImageMagick, vips and GIMP call the filters here, for the "did you mean" of an unknown name
// (a typo's nearest name comes from nearest_name; these are too far from ours to be found so).
std::string other_tools_name(std::string_view name) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"blur", "gaussian"},   {"gaussblur", "gaussian"}, {"gaussianblur", "gaussian"},
      {"gauss", "gaussian"},  {"mean", "box"},           {"average", "box"},
      {"boxblur", "box"},     {"usm", "unsharp"},        {"unsharpmask", "unsharp"},
      {"edge", "sobel"},      {"edges", "sobel"},        {"laplace", "laplacian"},
      {"convolve", "custom"}, {"kernel", "custom"},      {"sharp", "sharpen"}};
  std::string key;
  for (char c : name)
    if (c != '-' && c != '_' && c != ' ') key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& [theirs, ours] : kNames)
    if (key == theirs) return ours;
  return {};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> split_spec_params(std::string_view spec, std::string_view rest) {
  std::vector<std::pair<std::string, std::string>> items;
  std::size_t i = 0;
  while (i < rest.size()) {
    const auto eq = rest.find('=', i);
    const auto comma = rest.find(',', i);
    if (eq == std::string_view::npos || (comma != std::string_view::npos && comma < eq))
      throw bad_spec(spec,
                     fmt::format("'{}' is not key=value",
                                 rest.substr(i, comma == std::string_view::npos ? std::string_view::npos : comma - i)));
    std::string key(rest.substr(i, eq - i)), value;
    i = eq + 1;
    if (i < rest.size() && rest[i] == '"') {  // "a,b.txt": commas literal, \" and \\ escaped
      bool closed = false;
      for (++i; i < rest.size() && !closed; ++i) {
        if (rest[i] == '\\' && i + 1 < rest.size()) value += rest[++i];
        else if (rest[i] == '"') closed = true;
        else value += rest[i];
      }
      if (!closed) throw bad_spec(spec, fmt::format("the quoted value of '{}' has no closing quote", key));
      if (i < rest.size() && rest[i] != ',')
        throw bad_spec(spec, fmt::format("the quoted value of '{}' is followed by '{}', not a comma", key, rest[i]));
    } else {
      const auto end = std::min(rest.find(',', i), rest.size());
      value = std::string(rest.substr(i, end - i));
      i = end;
    }
    items.emplace_back(std::move(key), std::move(value));
    if (i < rest.size()) ++i;  // the comma
  }
  return items;
}

std::string spec_value(std::string_view value) {
  if (value.find(',') == std::string_view::npos && (value.empty() || value.front() != '"')) return std::string(value);
  std::string quoted = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + '"';
}

Stage parse_filter_spec(std::string_view spec) {
  const auto colon = spec.find(':');
  const std::string name(spec.substr(0, colon));
  const auto& catalog = filter_catalog();
  auto info = std::find_if(catalog.begin(), catalog.end(), [&](const FilterInfo& f) { return f.name == name; });
  if (info == catalog.end()) {
    std::vector<std::string> names;
    for (const auto& f : catalog) names.push_back(f.name);
    const std::string theirs = other_tools_name(name);
    const std::string hint = theirs.empty() ? did_you_mean(name, names) : suggestion(theirs);
    throw bad_spec(spec, fmt::format("unknown filter '{}' (known: {}){}", name, fmt::join(names, ", "), hint));
  }
  std::map<std::string, double> num;
  std::map<std::string, std::string> text;
  for (const auto& p : info->params) {
    if (p.kind == ParamInfo::Kind::Choice || p.kind == ParamInfo::Kind::Path) text[p.name] = p.default_text;
    else num[p.name] = p.default_value;
  }
  std::vector<std::string> seen;
  const auto items = colon == std::string_view::npos ? std::vector<std::pair<std::string, std::string>>{}
                                                     : split_spec_params(spec, spec.substr(colon + 1));
  for (const auto& [key, value] : items) {
    auto p = std::find_if(info->params.begin(), info->params.end(),
                          [&name = key](const ParamInfo& q) { return q.name == name; });
    if (p == info->params.end()) {
      std::vector<std::string> keys;
      for (const auto& q : info->params) keys.push_back(q.name);
      throw bad_spec(
          spec, fmt::format("unknown parameter '{}' for {} (parameters: {}){}", key, name,
                            keys.empty() ? "none" : fmt::format("{}", fmt::join(keys, ", ")), did_you_mean(key, keys)));
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw bad_spec(spec, fmt::format("'{}' given twice", key));
    seen.push_back(key);
    switch (p->kind) {
      case ParamInfo::Kind::Path:
        if (value.empty()) throw bad_spec(spec, fmt::format("'{}' is empty", key));
        text[key] = value;
        break;
      case ParamInfo::Kind::Choice:
        if (std::find(p->choices.begin(), p->choices.end(), value) == p->choices.end())
          throw bad_spec(spec, fmt::format("{}={} is not one of {}", key, value, fmt::join(p->choices, "|")));
        text[key] = value;
        break;
      case ParamInfo::Kind::Bool:
        if (value == "true" || value == "1" || value == "yes") num[key] = 1;
        else if (value == "false" || value == "0" || value == "no") num[key] = 0;
        else throw bad_spec(spec, fmt::format("{}={} is not true or false", key, value));
        break;
      case ParamInfo::Kind::Number:
      case ParamInfo::Kind::Integer: {
        double v = 0;
        if (!parse_number(value, v)) throw bad_spec(spec, fmt::format("{}={} is not a number", key, value));
        if (p->kind == ParamInfo::Kind::Integer && v != std::floor(v))
          throw bad_spec(spec, fmt::format("{}={} must be a whole number", key, value));
        if (v < p->min || v > p->max)
          throw bad_spec(spec, fmt::format("{}={} is out of range [{}, {}]", key, value, p->min, p->max));
        num[key] = v;
        break;
      }
    }
  }
  for (const auto& p : info->params)
    if (p.kind == ParamInfo::Kind::Path && text[p.name].empty())
      throw bad_spec(spec, fmt::format("parameter '{}' is required", p.name));
  return build_stage(name, num, text, std::string(spec));
}

Chain parse_chain(const std::vector<std::string>& specs) {
  if (specs.empty())
    throw Error(ErrorKind::InvalidArgument, "no filter given (use --filter, see `tilefilter filters`)");
  if (specs.size() > kMaxChainLength)
    throw Error(ErrorKind::Limit,
                fmt::format("a chain of {} filters is longer than the limit of {}", specs.size(), kMaxChainLength));
  Chain chain;
  for (const auto& s : specs) chain.push_back(parse_filter_spec(s));
  check_chain_halo(chain);
  return chain;
}

Kernel parse_kernel_text(std::string_view text, const std::string& origin) {
  std::vector<std::vector<double>> rows;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    std::vector<double> row;
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() &&
             (line[i] == ' ' || line[i] == '\t' || line[i] == ',' || line[i] == '\r' || line[i] == ';'))
        ++i;
      std::size_t j = i;
      while (j < line.size() &&
             !(line[j] == ' ' || line[j] == '\t' || line[j] == ',' || line[j] == '\r' || line[j] == ';'))
        ++j;
      if (j > i) {
        double v = 0;
        const std::string_view tok = line.substr(i, j - i);
        auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
        if (ec != std::errc() || p != tok.data() + tok.size() || !std::isfinite(v))
          throw Error(ErrorKind::InvalidArgument, fmt::format("{}:{}: '{}' is not a number", origin, line_no, tok));
        row.push_back(v);
      }
      i = j;
    }
    if (row.empty()) continue;
    if (!rows.empty() && row.size() != rows[0].size())
      throw Error(ErrorKind::InvalidArgument, fmt::format("{}:{}: row has {} numbers, the first row has {}", origin,
                                                          line_no, row.size(), rows[0].size()));
    // One row or one column (separable) up to kMaxSeparableTaps; anything else 2-D, up to kMaxKernelSide a side.
    const std::size_t w = row.size(), h = rows.size() + 1;
    const bool one_line = w == 1 || h == 1;
    const std::size_t most = one_line ? kMaxSeparableTaps : kMaxKernelSide;
    if (w > most || h > most)
      throw Error(ErrorKind::Limit,
                  fmt::format("{}: kernel larger than the limits of {}x{} (2-D) and {} taps (one row or column)",
                              origin, kMaxKernelSide, kMaxKernelSide, kMaxSeparableTaps));
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw Error(ErrorKind::InvalidArgument, fmt::format("{}: kernel file holds no numbers", origin));

  return Kernel::from_rows(rows);
}

Kernel load_kernel_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(ErrorKind::Io, fmt::format("{}: is a directory, not a kernel file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, fmt::format("{}: cannot open kernel file ({})", path, std::strerror(errno)));
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > (64u << 20)) throw Error(ErrorKind::Limit, fmt::format("{}: kernel file larger than 64 MiB", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_kernel_text(ss.str(), path);
}

}  // namespace tf
