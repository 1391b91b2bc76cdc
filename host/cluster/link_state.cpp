#include "cluster/link_state.hpp"

#include "cluster/system_command.hpp"

#include <fstream>
#include <string>

namespace gradsweep::cluster {

std::vector<int> nodes_with_link_down(const ClusterSpec& spec) {
  std::vector<int> down;
  for (int node = 0; node < spec.nodes; ++node) {
    // `ip -o link show dev X`: "5: X@if4: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu ...". A link set down on the
    // bridge's side loses UP and LOWER_UP; one set down inside the node loses LOWER_UP here.
    const CommandOutcome shown = run_command({"ip", "-o", "link", "show", "dev", spec.veth_name(node)});
    const bool carrier = shown.exit_code == 0 && shown.out.find(",LOWER_UP") != std::string::npos;
    if (!carrier) down.push_back(node);
  }
  return down;
}

namespace {
std::uint64_t counter(const std::string& link, const char* name) {
  std::ifstream in("/sys/class/net/" + link + "/statistics/" + name);
  std::uint64_t value = 0;
  return (in >> value) ? value : 0;
}
}  // namespace

std::vector<LinkBytes> link_bytes(const ClusterSpec& spec) {
  std::vector<LinkBytes> bytes;
  for (int node = 0; node < spec.nodes; ++node) {
    const std::string link = spec.veth_name(node);
    // The bridge's end: what it receives came from the node, what it transmits goes to the node.
    bytes.push_back({counter(link, "rx_bytes"), counter(link, "tx_bytes")});
  }
  return bytes;
}

}  // namespace gradsweep::cluster
