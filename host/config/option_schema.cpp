#include "config/option_schema.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <iomanip>
#include <sstream>

namespace gradsweep::config {

const char* type_name(sdk::OptionType type) {
  switch (type) {
    case sdk::OptionType::Bool: return "a boolean";
    case sdk::OptionType::Int: return "an integer";
    case sdk::OptionType::Float: return "a finite number";
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
        // Accept integral floats such as 1e6 for counts; one beyond int64 (1e30, inf) would not convert.
        const double d = std::stod(text, &used);
        if (used == text.size() && std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.2e18)
          return static_cast<std::int64_t>(d);
        return std::nullopt;
      }
      case sdk::OptionType::Float: {
        std::size_t used = 0;
        const double v = std::stod(text, &used);
        // inf and nan are never a setting: an infinite learning rate "trains" a step before diverging.
        if (used == text.size() && std::isfinite(v)) return v;
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

std::string number_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream out;
  out << std::setprecision(12) << v;
  return out.str();
}

}  // namespace

bool ValueRange::contains(double v) const { return (open_min ? v > min : v >= min) && (open_max ? v < max : v <= max); }

std::string ValueRange::text() const {
  return std::string(open_min ? "(" : "[") + number_text(min) + ", " + number_text(max) + (open_max ? ")" : "]");
}

std::vector<sdk::OptionSpec> specs_of(const std::vector<HostOption>& options) {
  std::vector<sdk::OptionSpec> specs;
  for (const auto& o : options) specs.push_back(o.spec);
  return specs;
}

sdk::Options resolve_options(const YAML::Node& section, const std::string& path, const std::vector<HostOption>& options,
                             const std::set<std::string>& ignored, Diagnostics& diag) {
  sdk::Options values = resolve_options(section, path, specs_of(options), ignored, diag);
  check_ranges(section, path, options, values, diag);
  return values;
}

void check_ranges(const YAML::Node& section, const std::string& path, const std::vector<HostOption>& options,
                  const sdk::Options& values, Diagnostics& diag) {
  for (const auto& o : options) {
    if (o.choices != nullptr && o.spec.type == sdk::OptionType::String && values.has(o.spec.key))
      check_choice(section, path, o.spec.key, values.text(o.spec.key), o.choices, " (the default)", diag);
    if (!values.has(o.spec.key) || (o.spec.type != sdk::OptionType::Int && o.spec.type != sdk::OptionType::Float))
      continue;
    const double v = values.number(o.spec.key);
    if (o.range.contains(v)) continue;
    const YAML::Node node = section && section.IsMap() ? section[o.spec.key] : YAML::Node();
    const std::string full = path.empty() ? o.spec.key : path + "." + o.spec.key;
    const std::string got = node && node.IsScalar() ? node.Scalar() : number_text(v);
    diag.error(node ? node : section, full,
               "must be in " + o.range.text() + ", got " + got + (node ? "" : " (the default)"));
  }
}

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
                   "unknown key" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                       "; known keys: " + (known.empty() ? "none" : known));
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

std::vector<std::string> split_choices(const std::string& choices) {
  std::vector<std::string> out;
  if (choices.empty()) return out;
  for (std::string::size_type begin = 0;;) {
    const auto bar = choices.find('|', begin);
    out.push_back(choices.substr(begin, bar == std::string::npos ? std::string::npos : bar - begin));
    if (bar == std::string::npos) return out;
    begin = bar + 1;
  }
}

bool check_choice(const YAML::Node& section, const std::string& path, const std::string& key, const std::string& value,
                  const std::string& choices, const std::string& default_note, Diagnostics& diag) {
  const std::vector<std::string> allowed = split_choices(choices);
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return true;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  const YAML::Node node = section && section.IsMap() ? section[key] : YAML::Node();
  const std::string full = path.empty() ? key : path + "." + key;
  diag.error(node ? node : section, full, "'" + value + "' is not one of " + list + (node ? "" : default_note));
  return false;
}

void check_choices(const YAML::Node& section, const std::string& path, const std::vector<sdk::OptionSpec>& specs,
                   const OptionChoices& choices, const sdk::Options& values, Diagnostics& diag) {
  for (std::size_t i = 0; i < specs.size() && i < choices.size(); ++i) {
    const sdk::OptionSpec& spec = specs[i];
    if (choices[i].empty() || spec.type != sdk::OptionType::String || !values.has(spec.key)) continue;
    check_choice(section, path, spec.key, values.text(spec.key), choices[i],
                 " (the plugin's default: a bug in the plugin)", diag);
  }
}

sdk::Options resolve_options(const YAML::Node& section, const std::string& path,
                             const std::vector<sdk::OptionSpec>& specs, const OptionChoices& choices,
                             const std::set<std::string>& ignored, Diagnostics& diag) {
  sdk::Options values = resolve_options(section, path, specs, ignored, diag);
  check_choices(section, path, specs, choices, values, diag);
  return values;
}

YAML::Node to_yaml(const sdk::Options& options) {
  YAML::Node node(YAML::NodeType::Map);
  // The keys are distinct (a map): appended without node[k]'s search through the keys before, which made
  // this the costliest step of planning a sweep (once per section of every cell).
  for (const auto& [key, value] : options.values())
    std::visit([&, k = key](const auto& v) { node.force_insert(k, v); }, value);
  return node;
}

}  // namespace gradsweep::config
