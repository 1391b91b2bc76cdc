#include "cluster/bandwidth.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace gradsweep::cluster {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::invalid_argument bad(const std::string& key, const std::string& text, const std::string& why) {
  return std::invalid_argument(key + ": '" + text + "' " + why +
                               " (expected a rate in bits per second such as 100mbit, 1Gbit or 10Gbit)");
}

}  // namespace

std::uint64_t parse_bandwidth(const std::string& text, const std::string& key) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) throw bad(key, text, "does not start with a number");
  double value = 0;
  try {
    std::size_t used = 0;
    value = std::stod(text.substr(0, i), &used);
    if (used != i) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw bad(key, text, "has a malformed number");
  }
  const std::string unit = lower(text.substr(i));
  if (unit.find("bps") != std::string::npos || unit.find("/s") != std::string::npos ||
      unit.find("byte") != std::string::npos || (!unit.empty() && unit.back() == 'b'))
    throw bad(key, text, "looks like bytes per second, which gradsweep does not take (tc's 'mbps' is MB/s)");
  const std::pair<const char*, double> units[] = {
      {"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12}};
  for (const auto& [name, scale] : units) {
    if (unit != name) continue;
    const double bits = std::round(value * scale);
    if (!(bits >= 1000)) throw bad(key, text, "is below 1kbit");
    if (bits > 1e13) throw bad(key, text, "is above 10Tbit");
    return static_cast<std::uint64_t>(bits);
  }
  if (unit.empty()) throw bad(key, text, "has no unit");
  throw bad(key, text, "has an unknown unit '" + text.substr(i) + "'");
}

std::string format_bandwidth(std::uint64_t bits) {
  const std::pair<const char*, double> units[] = {{"Tbit", 1e12}, {"Gbit", 1e9}, {"Mbit", 1e6}, {"kbit", 1e3}};
  for (const auto& [name, scale] : units) {
    if (static_cast<double>(bits) < scale) continue;
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.6g%s", static_cast<double>(bits) / scale, name);
    return buffer;
  }
  return std::to_string(bits) + "bit";
}

}  // namespace gradsweep::cluster
