#pragma once
// A mistyped command named as such. CLI11 alone answers `gradsweep frobnicate x` with "A subcommand is
// required" and `gradsweep frobnicate --help` with the general help and exit 0; a user expects to be told
// which word it did not know and what they probably meant, as git and cargo do.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gradsweep::cli {

// The visible subcommand of `names` nearest to `word` by edit distance, when it is near enough to be a
// typo (at most a third of the longer word's letters, and at least 1, differ); "" otherwise.
std::string nearest_command(const std::string& word, const std::vector<std::string>& names);

// The error for the command line `args` (argv without the program's name) when a word in a command's
// place names no command: "unknown command 'frobnicate' (did you mean 'plan'?)". The words are followed
// down the subcommands while each one names one; an option (a word that starts with '-') ends the walk,
// since what follows it may be the option's value. nullopt: nothing unknown, CLI11 parses as usual.
std::optional<std::string> unknown_command(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace gradsweep::cli
