// A number field of a summary or measurement object: its value, or `missing` when the object, the key or a
// number is not there (NaN by default, which tables print as "-" and statistics skip).
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>

namespace gradsweep::analysis {

inline double json_number(const nlohmann::json& j, const char* key, double missing = NAN) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : missing;
}

}  // namespace gradsweep::analysis
