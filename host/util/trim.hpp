// A line of another program's output without its surrounding white space (Slurm's answers, log lines, the
// cell status file).
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

namespace gradsweep::util {

inline std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

}  // namespace gradsweep::util
