#pragma once
// A cell's identity: a hash of its fully resolved configuration (every key with defaults filled in,
// plugin options included, data paths absolute, plus the ranks it runs on). Maps are hashed with their
// keys sorted, so the order keys are written in does not matter, and values are hashed as resolved
// ("1e-3" and "0.001" are the same learning rate). Same configuration -> same id, on any run.
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <string>

namespace gradsweep::experiment {

// Mappings -> objects (keys sorted), sequences -> arrays, scalars -> strings.
nlohmann::json canonical_json(const YAML::Node& node);

// 16 hex digits (64-bit FNV-1a over the canonical JSON text).
std::string config_hash(const nlohmann::json& resolved);

// The cell's directory name: the first 12 hex digits of its hash.
std::string cell_id(const std::string& config_hash);

}  // namespace gradsweep::experiment
