#include "config/config_error.hpp"

namespace gradsweep::config {

namespace {
std::string join(const std::vector<std::string>& problems) {
  std::string text =
      problems.size() == 1 ? "configuration error:" : std::to_string(problems.size()) + " configuration errors:";
  for (const auto& p : problems) text += "\n  " + p;
  return text;
}
}  // namespace

ConfigError::ConfigError(const std::vector<std::string>& problems)
    : std::runtime_error(join(problems)), problems_(problems) {}

void Diagnostics::error(const YAML::Node& where, const std::string& key, const std::string& message) {
  std::string location = file_;
  // Nodes created by --set overrides (or missing keys) have no position in the file.
  try {
    const YAML::Mark mark = where.IsDefined() ? where.Mark() : YAML::Mark::null_mark();
    if (mark.line >= 0) location += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  } catch (const YAML::Exception&) {
  }
  problems_.push_back(location + ": " + key + ": " + message);
}

void Diagnostics::throw_if_any() const {
  if (!problems_.empty()) throw ConfigError(problems_);
}

}  // namespace gradsweep::config
