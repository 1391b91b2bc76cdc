#pragma once
// Helpers shared by the test suites: where the built binary and plugins are, running the CLI as a user
// would, and a small real-text corpus prepared once per test binary; with test_files.hpp's directories
// and files.
#include "support/test_files.hpp"

#include <filesystem>
#include <string>

namespace gradsweep::test {

// The exit status of a command refused before it ran (host/main.cpp: any error in its configuration).
inline constexpr int kConfigError = 2;

std::filesystem::path plugin_dir();
std::filesystem::path gradsweep_binary();
struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};
// Runs a shell command line, capturing its output.
CommandResult run_command(const std::string& command_line);

// `command` on `ranks` real MPI processes, as the suites launch them: under `timeout` (a broken backend
// ends as exit 124 instead of hanging the suite), oversubscribed (the CI machine may have fewer cores
// than ranks), unbound (the ranks share the cores), allowed to run as root. `env` prefixes the line.
std::string mpirun(int ranks, const std::string& command, const std::string& env = "", int timeout_s = 60);

// Fortunes (Debian package `fortunes`) tokenized at byte level by `gradsweep prepare`, made once and
// shared: <dir>/train.bin, <dir>/val.bin, vocabulary 257 (256 bytes + end of text).
std::filesystem::path byte_corpus();
// The same text at word level, vocabulary 2000 (`--tokenizer word --vocab 2000`): a vocabulary large
// enough that a step touches only some of its rows.
inline constexpr int kWordCorpusVocab = 2000;
std::filesystem::path word_corpus();

}  // namespace gradsweep::test
