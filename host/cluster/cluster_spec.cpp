#include "cluster/cluster_spec.hpp"

#include "cluster/bandwidth.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

namespace gradsweep::cluster {
namespace fs = std::filesystem;

std::uint64_t ClusterSpec::shaped_bits_per_second() const {
  return static_cast<std::uint64_t>(std::llround(static_cast<double>(link_bits_per_second) / dilation));
}

std::string ClusterSpec::subnet() const { return "10.213." + std::to_string(subnet_index) + ".0/24"; }
std::string ClusterSpec::node_address(int node) const {
  return "10.213." + std::to_string(subnet_index) + "." + std::to_string(node + 1);
}
std::string ClusterSpec::bridge_address() const { return "10.213." + std::to_string(subnet_index) + ".254"; }
std::string ClusterSpec::object_prefix() const { return std::string(kPrefix) + name + "-"; }
std::string ClusterSpec::node_name(int node) const { return object_prefix() + "n" + std::to_string(node); }
std::string ClusterSpec::bridge_name() const { return object_prefix() + "br"; }
std::string ClusterSpec::veth_name(int node) const { return object_prefix() + "v" + std::to_string(node); }
std::string ClusterSpec::peer_name(int node) const { return object_prefix() + "p" + std::to_string(node); }

void validate_name(const std::string& name) {
  const bool ok = !name.empty() && name.size() <= kMaxNameLength && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
  if (!ok)
    throw std::invalid_argument(
        "--name: '" + name + "' must be 1 to " + std::to_string(kMaxNameLength) +
        " lower-case letters or digits (it becomes part of interface names, 15 characters at most)");
}

void validate(const ClusterSpec& spec) {
  validate_name(spec.name);
  if (spec.nodes < 1 || spec.nodes > kMaxNodes)
    throw std::invalid_argument("--nodes: " + std::to_string(spec.nodes) + " is not between 1 and " +
                                std::to_string(kMaxNodes));
  if (spec.ranks_per_node < 1)
    throw std::invalid_argument("--ranks-per-node: " + std::to_string(spec.ranks_per_node) + " must be at least 1");
  if (!(spec.dilation >= 1.0) || !std::isfinite(spec.dilation))
    throw std::invalid_argument("--dilation: " + std::to_string(spec.dilation) + " must be a number >= 1 (or auto)");
  if (spec.shaped_bits_per_second() < 8000)
    throw std::invalid_argument("--link-bandwidth / --dilation: the shaped rate " +
                                format_bandwidth(spec.shaped_bits_per_second()) + " is below 8kbit");
}

fs::path state_root() { return "/run/gradsweep/clusters"; }
fs::path state_dir(const std::string& name) { return state_root() / name; }

nlohmann::json to_json(const ClusterSpec& s) {
  nlohmann::json nodes = nlohmann::json::array();
  for (int i = 0; i < s.nodes; ++i) nodes.push_back({{"name", s.node_name(i)}, {"address", s.node_address(i)}});
  return {{"name", s.name},
          {"nodes", s.nodes},
          {"ranks_per_node", s.ranks_per_node},
          {"link_bandwidth", format_bandwidth(s.link_bits_per_second)},
          {"link_bits_per_second", s.link_bits_per_second},
          {"dilation", s.dilation},
          {"dilation_source", s.dilation_source},
          {"shaped_bits_per_second", s.shaped_bits_per_second()},
          {"subnet_index", s.subnet_index},
          {"subnet", s.subnet()},
          {"bridge", {{"name", s.bridge_name()}, {"address", s.bridge_address()}}},
          {"node_list", nodes}};
}

ClusterSpec spec_from_json(const nlohmann::json& j) {
  ClusterSpec s;
  s.name = j.at("name").get<std::string>();
  s.nodes = j.at("nodes").get<int>();
  s.ranks_per_node = j.at("ranks_per_node").get<int>();
  s.link_bits_per_second = j.at("link_bits_per_second").get<std::uint64_t>();
  s.dilation = j.at("dilation").get<double>();
  s.dilation_source = j.value("dilation_source", "fixed");
  s.subnet_index = j.at("subnet_index").get<int>();
  return s;
}

ClusterSpec load_cluster(const std::string& name) {
  validate_name(name);
  const fs::path file = state_dir(name) / "cluster.json";
  std::ifstream in(file);
  if (!in)
    throw std::runtime_error("cluster '" + name + "' is not up (no " + file.string() +
                             "); see `gradsweep cluster list`");
  try {
    return spec_from_json(nlohmann::json::parse(in));
  } catch (const std::exception& e) {
    throw std::runtime_error(file.string() + ": unreadable cluster state (" + e.what() + "); `gradsweep cluster down " +
                             name + "` removes it");
  }
}

std::vector<std::string> clusters_up() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(state_root(), ec))
    if (fs::exists(entry.path() / "cluster.json")) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace gradsweep::cluster
