#pragma once
// A number as a user wrote it in a message (0.7, not std::to_string's 0.700000).
#include <sstream>
#include <string>

namespace gradsweep::strategies {

inline std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace gradsweep::strategies
