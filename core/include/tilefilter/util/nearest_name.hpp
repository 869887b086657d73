// "Did you mean ...?": the name closest to a mistyped word, for the messages of every front end
// (the CLI's subcommands and options, core's filter and parameter names), as git and cargo suggest.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace tf {

// Edits (insert, delete, substitute, swap two neighbours) from a to b, ignoring case.
int edit_distance(std::string_view a, std::string_view b);

// The name within a third of the word's length in edits (at least one, at most three), the nearest
// first; "" when none is that close or the word is a name already.
std::string nearest_name(std::string_view word, const std::vector<std::string>& names);

// "; did you mean 'x'?" for nearest_name, or "" when there is none.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& names);
// "; did you mean 'name'?", or "" for no name: a suggestion found otherwise.
std::string suggestion(std::string_view name);

}  // namespace tf
