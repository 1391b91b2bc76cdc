#pragma once
// An option type as tables write it ("int"), for `gradsweep plugins` and the generated reference alike;
// messages use option_schema's type_name ("an integer") instead.
#include <gradsweep/sdk/options.hpp>

namespace gradsweep::config {

inline const char* type_keyword(sdk::OptionType type) {
  switch (type) {
    case sdk::OptionType::Bool: return "bool";
    case sdk::OptionType::Int: return "int";
    case sdk::OptionType::Float: return "float";
    case sdk::OptionType::String: return "string";
  }
  return "?";
}

}  // namespace gradsweep::config
