#include "cluster/cluster_link.hpp"

#include "cluster/bandwidth.hpp"
#include "cluster/cluster_lock.hpp"
#include "cluster/cluster_network.hpp"
#include "cluster/system_command.hpp"
#include "util/atomic_file.hpp"

#include <cmath>
#include <fstream>
#include <stdexcept>

namespace gradsweep::cluster {
namespace {

std::filesystem::path state_file(const std::string& name) { return state_dir(name) / "cluster.json"; }

nlohmann::json read_state(const std::string& name) {
  std::ifstream in(state_file(name));
  return nlohmann::json::parse(in, nullptr, false);
}

// cluster.json's "node_links": {"3": {"state": "down"|"up", "shaped_bits_per_second": N, ...}}, one entry per
// node whose link was changed. A node brought back up at the cluster's own rate is dropped again, so an
// entry always means "not as brought up".
void record(const ClusterSpec& spec, int node, const LinkChange& change) {
  nlohmann::json state = read_state(spec.name);
  if (!state.is_object()) throw std::runtime_error(state_file(spec.name).string() + ": unreadable cluster state");
  nlohmann::json& links = state["node_links"];
  if (!links.is_object()) links = nlohmann::json::object();
  const std::string key = std::to_string(node);
  nlohmann::json entry = links.value(key, nlohmann::json::object());
  if (change.kind == LinkChange::Kind::Shape) {
    entry["link_bandwidth"] = format_bandwidth(change.bits_per_second);
    entry["shaped_bits_per_second"] =
        static_cast<std::uint64_t>(std::llround(static_cast<double>(change.bits_per_second) / spec.dilation));
    if (change.bits_per_second == spec.link_bits_per_second) {
      entry.erase("link_bandwidth");
      entry.erase("shaped_bits_per_second");
    }
  } else {
    entry["state"] = change.kind == LinkChange::Kind::Down ? "down" : "up";
    if (change.kind == LinkChange::Kind::Up) entry.erase("state");
  }
  if (entry.empty())
    links.erase(key);
  else
    links[key] = entry;
  if (links.empty()) state.erase("node_links");
  util::write_file_atomically(state_file(spec.name), state.dump(2) + "\n");
}

}  // namespace

LinkChange parse_link_change(const std::string& action, const std::string& rate) {
  LinkChange change;
  if (action == "down" || action == "up") {
    if (!rate.empty())
      throw std::invalid_argument("cluster link: '" + action + "' takes no rate (got '" + rate +
                                  "'); `shape RATE` changes the rate");
    change.kind = action == "down" ? LinkChange::Kind::Down : LinkChange::Kind::Up;
    return change;
  }
  if (action != "shape") throw std::invalid_argument("cluster link: '" + action + "' is not down, up or shape");
  if (rate.empty()) throw std::invalid_argument("cluster link: shape needs a RATE, e.g. 10Mbit");
  change.kind = LinkChange::Kind::Shape;
  change.bits_per_second = parse_bandwidth(rate, "RATE");
  return change;
}

void check_node(const ClusterSpec& spec, int node) {
  if (node < 0 || node >= spec.nodes)
    throw std::invalid_argument("cluster link: node " + std::to_string(node) + " is not a node of cluster '" +
                                spec.name + "' (its nodes are 0 to " + std::to_string(spec.nodes - 1) + ")");
}

void set_node_link(const ClusterSpec& spec, int node, const LinkChange& change) {
  check_node(spec, node);
  require_network_admin("cluster link");
  ClusterLock lock;  // one change to a cluster at a time, and never while it is being brought down
  if (!std::filesystem::exists(state_file(spec.name)))
    throw std::runtime_error("cluster link: cluster '" + spec.name + "' went down meanwhile");
  switch (change.kind) {
    case LinkChange::Kind::Down:
    case LinkChange::Kind::Up:
      // The bridge's end: the node's eth0 then has no carrier, both directions drop silently, and the qdiscs
      // on both ends stay as they were (they come back with the carrier).
      run_checked({"ip", "link", "set", spec.veth_name(node), change.kind == LinkChange::Kind::Down ? "down" : "up"});
      break;
    case LinkChange::Kind::Shape: {
      ClusterSpec at = spec;
      at.link_bits_per_second = change.bits_per_second;
      if (at.shaped_bits_per_second() < 8000)
        throw std::invalid_argument("cluster link: the shaped rate " + format_bandwidth(at.shaped_bits_per_second()) +
                                    " (RATE / the cluster's dilation) is below 8kbit");
      shape_node_link(spec, node, at.shaped_bits_per_second());
      break;
    }
  }
  record(spec, node, change);
}

std::string describe_node_links(const std::string& name) {
  const nlohmann::json state = read_state(name);
  if (!state.is_object() || !state.contains("node_links") || !state["node_links"].is_object()) return "";
  std::string text;
  for (const auto& [node, entry] : state["node_links"].items()) {
    std::string parts;
    if (entry.contains("state")) parts = entry["state"].get<std::string>();
    if (entry.contains("link_bandwidth"))
      parts += (parts.empty() ? "" : ", ") + std::string("link ") + entry["link_bandwidth"].get<std::string>() +
               " (shaped at " + format_bandwidth(entry["shaped_bits_per_second"].get<std::uint64_t>()) + ")";
    text += (text.empty() ? "" : "; ") + std::string("node ") + node + " " + parts;
  }
  return text;
}

}  // namespace gradsweep::cluster
