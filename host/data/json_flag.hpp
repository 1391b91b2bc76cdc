// A boolean field of a tokenizer.json object: its value when it is a boolean, else the fallback (absent and
// null mean the default in Hugging Face's files).
#pragma once

#include <nlohmann/json.hpp>

namespace gradsweep::data {

inline bool json_flag(const nlohmann::json& object, const char* key, bool fallback) {
  const auto it = object.find(key);
  return it != object.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

}  // namespace gradsweep::data
