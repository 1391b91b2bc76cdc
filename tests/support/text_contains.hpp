#pragma once
// Whether a message, log or report holds a phrase: what most tests assert of the words a user reads.
#include <string>

namespace gradsweep::test {

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace gradsweep::test
