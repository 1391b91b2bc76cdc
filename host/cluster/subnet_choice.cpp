#include "cluster/subnet_choice.hpp"

#include <algorithm>
#include <cstdint>
#include <regex>

namespace gradsweep::cluster {
namespace {

struct Prefix {
  std::uint32_t address;
  int length;
};

std::vector<Prefix> prefixes_in(const std::string& text) {
  static const std::regex ipv4(R"((\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:/(\d{1,2}))?)");
  std::vector<Prefix> found;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), ipv4); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    std::uint32_t a = 0;
    bool ok = true;
    for (int i = 1; i <= 4; ++i) {
      const int octet = std::stoi(m[i].str());
      ok = ok && octet <= 255;
      a = (a << 8) | static_cast<std::uint32_t>(octet & 255);
    }
    const int length = m[5].matched ? std::stoi(m[5].str()) : 32;
    // 0.0.0.0/0 is the default route: it covers everything and says nothing about what is in use.
    if (ok && length >= 1 && length <= 32) found.push_back({a, length});
  }
  return found;
}

bool overlaps(const Prefix& p, std::uint32_t subnet) {
  const int common = std::min(p.length, 24);
  const std::uint32_t mask = common == 0 ? 0 : ~std::uint32_t{0} << (32 - common);
  return (p.address & mask) == (subnet & mask);
}

}  // namespace

int choose_subnet(const std::vector<int>& taken, const std::string& ip_output) {
  const std::vector<Prefix> in_use = prefixes_in(ip_output);
  for (int k = 1; k < 255; ++k) {
    if (std::find(taken.begin(), taken.end(), k) != taken.end()) continue;
    const std::uint32_t subnet = (10u << 24) | (213u << 16) | (static_cast<std::uint32_t>(k) << 8);
    if (std::none_of(in_use.begin(), in_use.end(), [subnet](const Prefix& p) { return overlaps(p, subnet); })) return k;
  }
  return -1;
}

}  // namespace gradsweep::cluster
