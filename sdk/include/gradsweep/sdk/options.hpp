#pragma once
// A plugin's configuration: the schema it declares, and the validated values it receives.
//
// Each plugin lists the keys it accepts in its descriptor. The host checks the user's configuration
// against that list before creating anything (an unknown key or a wrong type is reported with its file
// and line), fills in defaults, and hands the plugin an `Options` whose values already have the right
// type. A plugin therefore never parses YAML and never links a YAML library.
#include <gradsweep/sdk/status.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <variant>

namespace gradsweep::sdk {

enum class OptionType : std::uint32_t { Bool = 0, Int = 1, Float = 2, String = 3 };

// One accepted key. `default_value` is the value as YAML text, or nullptr when the key has no default
// (then `Options::has` tells whether the user gave it).
struct OptionSpec {
  const char* key;
  OptionType type;
  const char* default_value;
  const char* help;
};

class Options {
 public:
  using Value = std::variant<bool, std::int64_t, double, std::string>;

  Options() = default;
  explicit Options(std::map<std::string, Value> values) : values_(std::move(values)) {}

  bool has(const std::string& key) const { return values_.count(key) != 0; }
  bool flag(const std::string& key) const { return get<bool>(key); }
  std::int64_t integer(const std::string& key) const { return get<std::int64_t>(key); }
  double number(const std::string& key) const {
    const Value& v = at(key);
    if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
    return get<double>(key);
  }
  const std::string& text(const std::string& key) const { return get<std::string>(key); }

  std::int64_t integer_or(const std::string& key, std::int64_t fallback) const {
    return has(key) ? integer(key) : fallback;
  }
  double number_or(const std::string& key, double fallback) const { return has(key) ? number(key) : fallback; }

  const std::map<std::string, Value>& values() const { return values_; }

 private:
  const Value& at(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) throw Error("option '" + key + "' is not set");
    return it->second;
  }
  template <class T>
  const T& get(const std::string& key) const {
    const T* v = std::get_if<T>(&at(key));
    if (v == nullptr) throw Error("option '" + key + "' has another type");
    return *v;
  }

  std::map<std::string, Value> values_;
};

}  // namespace gradsweep::sdk
