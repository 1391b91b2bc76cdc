#include "config/option_schema.hpp"

#include <cmath>
#include <optional>

namespace gradsweep::host {

const char* type_name(sdk::OptionType type) {
  switch (type) {
    case sdk::OptionType::Bool: return "a boolean";
    case sdk::OptionType::Int: return "an integer";
    case sdk::OptionType::Float: return "a number";
    case sdk::OptionType::String: return "a string";
  }
  return "?";
}

namespace {

std::optional<sdk::Options::Value> parse_scalar(const std::string& text, sdk::OptionType type) {
  try {
    switch (type) {
      case sdk::OptionType::Bool:
        if (text == "true" || text == "True" || text == "yes" || text == "on") return true;
        if (text == "false" || text == "False" || text == "no" || text == "off") return false;
        return std::nullopt;
      case sdk::OptionType::Int: {
        std::size_t used = 0;
        const long long v = std::stoll(text, &used, 0);
        if (used == text.size()) return static_cast<std::int64_t>(v);
        // Accept integral floats such as 1e6 for counts.
        const double d = std::stod(text, &used);
        if (used == text.size() && std::floor(d) == d) return static_cast<std::int64_t>(d);
        return std::nullopt;
      }
      case sdk::OptionType::Float: {
        std::size_t used = 0;
        const double v = std::stod(text, &used);
        if (used == text.size()) return v;
        return std::nullopt;
      }
      case sdk::OptionType::String: return text;
    }
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::string closest_key(const std::string& key, const std::vector<sdk::OptionSpec>& specs) {
  // Suggest a key sharing a prefix or suffix of a few characters; cheap and catches most typos.
  for (const auto& s : specs) {
    const std::string k = s.key;
    if (k.size() >= 3 && key.size() >= 3 &&
        (k.compare(0, 3, key, 0, 3) == 0 || k.compare(k.size() - 3, 3, key, key.size() - 3, 3) == 0))
      return k;
  }
  return "";
}

}  // namespace

sdk::Options resolve_options(const YAML::Node& section, const std::string& path,
                             const std::vector<sdk::OptionSpec>& specs, const std::set<std::string>& ignored,
                             Diagnostics& diag) {
  std::map<std::string, sdk::Options::Value> values;
  if (section && !section.IsNull() && !section.IsMap()) {
    diag.error(section, path, "expected a mapping of keys to values");
    return sdk::Options{};
  }
  if (section && section.IsMap()) {
    for (const auto& item : section) {
      const std::string key = item.first.as<std::string>();
      if (ignored.count(key)) continue;
      const std::string full = path.empty() ? key : path + "." + key;
      const sdk::OptionSpec* spec = nullptr;
      for (const auto& s : specs)
        if (key == s.key) spec = &s;
      if (spec == nullptr) {
        std::string known;
        for (const auto& s : specs) known += (known.empty() ? "" : ", ") + std::string(s.key);
        const std::string hint = closest_key(key, specs);
        diag.error(item.first, full,
                   "unknown key" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") + "; known keys: " +
                       (known.empty() ? "none" : known));
        continue;
      }
      if (!item.second.IsScalar()) {
        diag.error(item.second, full, std::string("expected ") + type_name(spec->type));
        continue;
      }
      const std::string text = item.second.Scalar();
      auto value = parse_scalar(text, spec->type);
      if (!value) {
        diag.error(item.second, full, std::string("expected ") + type_name(spec->type) + ", got '" + text + "'");
        continue;
      }
      values[key] = *value;
    }
  }
  for (const auto& s : specs) {
    if (values.count(s.key) || s.default_value == nullptr) continue;
    auto value = parse_scalar(s.default_value, s.type);
    if (!value)
      diag.error(std::string("internal: default of ") + path + "." + s.key + " is not " + type_name(s.type));
    else
      values[s.key] = *value;
  }
  return sdk::Options(std::move(values));
}

YAML::Node to_yaml(const sdk::Options& options) {
  YAML::Node node(YAML::NodeType::Map);
  for (const auto& [key, value] : options.values())
    std::visit([&, k = key](const auto& v) { node[k] = v; }, value);
  return node;
}

}  // namespace gradsweep::host
