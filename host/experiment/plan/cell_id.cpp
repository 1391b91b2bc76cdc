#include "experiment/plan/cell_id.hpp"

#include <cstdint>
#include <cstdio>

namespace gradsweep::experiment {

nlohmann::json canonical_json(const YAML::Node& node) {
  if (!node || node.IsNull()) return nullptr;
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence()) {
    nlohmann::json array = nlohmann::json::array();
    for (const auto& item : node) array.push_back(canonical_json(item));
    return array;
  }
  nlohmann::json object = nlohmann::json::object();  // std::map underneath: keys come out sorted
  for (const auto& item : node) object[item.first.as<std::string>()] = canonical_json(item.second);
  return object;
}

std::string config_hash(const nlohmann::json& resolved) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a offset basis
  for (const unsigned char c : resolved.dump()) {
    h ^= c;
    h *= 1099511628211ull;  // FNV prime
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

std::string cell_id(const std::string& config_hash) { return config_hash.substr(0, 12); }

}  // namespace gradsweep::experiment
