#pragma once
// Configuration problems, collected so that the user sees all of them at once, each with file:line:column.
#include <yaml-cpp/yaml.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace gradsweep::config {

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::vector<std::string>& problems);
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}

  // "exp.yaml:12:5: train.lr: expected a number, got 'fast'"
  void error(const YAML::Node& where, const std::string& key, const std::string& message);
  void error(const std::string& message) { problems_.push_back(file_ + ": " + message); }

  void append(const Diagnostics& other) {
    problems_.insert(problems_.end(), other.problems_.begin(), other.problems_.end());
  }

  bool empty() const { return problems_.empty(); }
  const std::string& file() const { return file_; }
  // Throws ConfigError listing every problem recorded, if any.
  void throw_if_any() const;

 private:
  std::string file_;
  std::vector<std::string> problems_;
};

}  // namespace gradsweep::config
