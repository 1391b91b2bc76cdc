#include "cli/unknown_command.hpp"

#include <algorithm>
#include <cstddef>

namespace gradsweep::cli {
namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The subcommands a user may type here: hidden ones (a group of "") are never suggested.
std::vector<std::string> visible_commands(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!sub->get_group().empty()) names.push_back(sub->get_name());
  return names;
}

}  // namespace

std::string nearest_command(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  std::size_t best_distance = 0;
  for (const std::string& name : names) {
    const std::size_t d = edit_distance(word, name);
    const std::size_t limit = std::max<std::size_t>(1, std::max(word.size(), name.size()) / 3);
    if (d <= limit && (best.empty() || d < best_distance)) {
      best = name;
      best_distance = d;
    }
  }
  return best;
}

std::optional<std::string> unknown_command(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* level = &app;
  std::string path = level->get_name();
  for (const std::string& word : args) {
    if (word.empty() || word[0] == '-') return std::nullopt;
    const auto subs = level->get_subcommands([](const CLI::App*) { return true; });
    const auto named = std::find_if(subs.begin(), subs.end(), [&](const CLI::App* s) { return s->check_name(word); });
    if (named != subs.end()) {
      level = *named;
      path += " " + level->get_name();
      continue;
    }
    // A word where a command must come: this level has commands, takes no positional words of its own, and
    // needs one of its commands.
    if (subs.empty() || !level->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty() ||
        level->get_require_subcommand_min() == 0)
      return std::nullopt;
    const std::string near = nearest_command(word, visible_commands(*level));
    return "unknown command '" + word + "' for '" + path + "'" +
           (near.empty() ? "" : " (did you mean '" + near + "'?)") + "; '" + path + " --help' lists the commands";
  }
  return std::nullopt;
}

}  // namespace gradsweep::cli
