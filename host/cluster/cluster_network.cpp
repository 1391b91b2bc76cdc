#include "cluster/cluster_network.hpp"

#include "cluster/system_command.hpp"

#include <signal.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace gradsweep::cluster {
namespace {

// tbf's bucket must hold at least one timer tick of traffic at the rate, or the rate is not reached;
// 10 ms of traffic (at least 64 KiB) is comfortably above that and small next to a collective's bytes.
std::vector<std::string> tbf(const std::string& device, std::uint64_t bits_per_second) {
  const std::uint64_t burst = std::max<std::uint64_t>(64 * 1024, bits_per_second / 8 / 100);
  return {"qdisc",   "replace",
          "dev",     device,
          "root",    "tbf",
          "rate",    std::to_string(bits_per_second) + "bit",
          "burst",   std::to_string(burst),
          "latency", "50ms"};
}

std::vector<std::string> in_namespace(const std::string& ns, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"ip", "netns", "exec", ns});
  return argv;
}

void create_node(const ClusterSpec& s, int i) {
  const std::string ns = s.node_name(i), veth = s.veth_name(i), peer = s.peer_name(i);
  run_checked({"ip", "netns", "add", ns});
  run_checked({"ip", "link", "add", veth, "type", "veth", "peer", "name", peer});
  run_checked({"ip", "link", "set", peer, "netns", ns});
  run_checked({"ip", "-n", ns, "link", "set", peer, "name", "eth0"});
  run_checked({"ip", "-n", ns, "addr", "add", s.node_address(i) + "/24", "dev", "eth0"});
  run_checked({"ip", "-n", ns, "link", "set", "eth0", "up"});
  run_checked({"ip", "-n", ns, "link", "set", "lo", "up"});
  run_checked({"ip", "link", "set", veth, "master", s.bridge_name()});
  run_checked({"ip", "link", "set", veth, "up"});
  shape_node_link(s, i, s.shaped_bits_per_second());
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(line);
  return out;
}

}  // namespace

void shape_node_link(const ClusterSpec& s, int node, std::uint64_t bits_per_second) {
  // Both directions: the bridge's end sends what the node receives, the node's end what it sends.
  std::vector<std::string> root_side = tbf(s.veth_name(node), bits_per_second);
  root_side.insert(root_side.begin(), "tc");
  run_checked(root_side);
  std::vector<std::string> node_side = tbf("eth0", bits_per_second);
  node_side.insert(node_side.begin(), "tc");
  run_checked(in_namespace(s.node_name(node), node_side));
}

void create_network(const ClusterSpec& s) {
  try {
    run_checked({"ip", "link", "add", s.bridge_name(), "type", "bridge"});
    run_checked({"ip", "addr", "add", s.bridge_address() + "/24", "dev", s.bridge_name()});
    run_checked({"ip", "link", "set", s.bridge_name(), "up"});
    for (int i = 0; i < s.nodes; ++i) create_node(s, i);
  } catch (const std::exception& e) {
    const std::vector<std::string> left = remove_objects(s.object_prefix());
    std::string message = std::string(e.what()) + "; rolled back what was made";
    for (const std::string& l : left) message += "; " + l;
    throw std::runtime_error(message);
  }
}

NetworkObjects find_objects(const std::string& prefix) {
  NetworkObjects found;
  // `ip netns list` prints "name" or "name (id: 3)".
  for (const std::string& line : lines(run_checked({"ip", "netns", "list"}))) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(prefix, 0) == 0) found.namespaces.push_back(name);
  }
  // `ip -o link show` prints "7: name@peer: <...> ...".
  for (const std::string& line : lines(run_checked({"ip", "-o", "link", "show"}))) {
    const std::size_t start = line.find(": ");
    if (start == std::string::npos) continue;
    std::string name = line.substr(start + 2);
    name = name.substr(0, name.find_first_of("@:"));
    if (name.rfind(prefix, 0) == 0) found.links.push_back(name);
  }
  std::sort(found.namespaces.begin(), found.namespaces.end());
  std::sort(found.links.begin(), found.links.end());
  return found;
}

std::vector<std::string> remove_objects(const std::string& prefix) {
  std::vector<std::string> problems;
  const NetworkObjects found = find_objects(prefix);
  for (const std::string& ns : found.namespaces) {
    // A rank left running would keep the namespace's network alive after `ip netns del`.
    for (const std::string& pid : lines(run_command({"ip", "netns", "pids", ns}).out))
      ::kill(static_cast<pid_t>(std::stol(pid)), SIGKILL);
    const CommandOutcome o = run_command({"ip", "netns", "del", ns});
    if (o.exit_code != 0) problems.push_back("namespace " + ns + ": " + o.err);
  }
  // Deleting a namespace deletes its veth ends, and with them their peers here; what is left is the
  // bridge and any veth a killed `up` made before moving its peer.
  // The kernel removes those peers asynchronously: a link gone by the time we delete it is not a problem.
  for (const std::string& link : find_objects(prefix).links) {
    const CommandOutcome o = run_command({"ip", "link", "del", link});
    if (o.exit_code != 0 && run_command({"ip", "link", "show", "dev", link}).exit_code == 0)
      problems.push_back("link " + link + ": " + o.err);
  }
  return problems;
}

std::string root_addresses_and_routes() {
  return run_checked({"ip", "-4", "-o", "addr", "show"}) + run_checked({"ip", "-4", "route", "show"});
}

}  // namespace gradsweep::cluster
