#include "cluster/mpi_access.hpp"

#include "util/atomic_file.hpp"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gradsweep::cluster {
namespace fs = std::filesystem;
namespace {

const fs::path kHostsFile = "/etc/hosts";
const std::string kHostsMarker = "# gradsweep-cluster ";

std::string read_hosts() {
  std::ifstream in(kHostsFile);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Atomically where it can be (a kill midway must not leave a truncated /etc/hosts); in containers it is
// often a bind mount, where a rename over it fails: then in place.
void write_hosts(const std::string& text) {
  struct stat before {};
  const mode_t mode = ::stat(kHostsFile.c_str(), &before) == 0 ? (before.st_mode & 07777) : 0644;
  try {
    util::write_file_atomically(kHostsFile, text);
    ::chmod(kHostsFile.c_str(), mode);
    return;
  } catch (const std::exception&) {
  }
  std::ofstream out(kHostsFile, std::ios::trunc);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + kHostsFile.string());
}

std::string cluster_of_line(const std::string& line) {
  const std::size_t at = line.find(kHostsMarker);
  return at == std::string::npos ? "" : line.substr(at + kHostsMarker.size());
}

}  // namespace

fs::path agent_path(const ClusterSpec& s) { return state_dir(s.name) / "rsh-agent"; }
fs::path hostfile_path(const ClusterSpec& s) { return state_dir(s.name) / "hostfile"; }

void write_mpi_access(const ClusterSpec& s) {
  // Open MPI calls the agent as `agent HOST orted-command...`, as it would call ssh; the command is one
  // shell line, as ssh would hand it to the remote shell. Only this cluster's namespaces are accepted.
  // Each node gets its own host name (a UTS namespace): Open MPI names its session directory and vader's
  // shared-memory segments after the host name, and nodes sharing one collided (ranks crashed in vader).
  const std::string agent =
      "#!/bin/sh\n"
      "# gradsweep cluster " +
      s.name +
      ": Open MPI's rsh agent; runs the command inside the node's namespace.\n"
      "host=\"$1\"; shift\n"
      "case \"$host\" in " +
      s.object_prefix() + "n*) ;; *) echo \"gradsweep cluster " + s.name +
      ": '$host' is not one of its nodes\" >&2; exit 1;; esac\n"
      "exec ip netns exec \"$host\" unshare --uts /bin/sh -c \"hostname $host && $*\"\n";
  util::write_file_atomically(agent_path(s), agent);
  ::chmod(agent_path(s).c_str(), 0755);
  std::string hostfile;
  for (int i = 0; i < s.nodes; ++i) hostfile += s.node_name(i) + " slots=" + std::to_string(s.ranks_per_node) + "\n";
  util::write_file_atomically(hostfile_path(s), hostfile);

  remove_host_entries(s.name);
  std::string hosts = read_hosts();
  if (!hosts.empty() && hosts.back() != '\n') hosts += '\n';
  for (int i = 0; i < s.nodes; ++i)
    hosts += s.node_address(i) + " " + s.node_name(i) + " " + kHostsMarker + s.name + "\n";
  write_hosts(hosts);
}

void remove_host_entries(const std::string& name) {
  const std::string hosts = read_hosts();
  std::istringstream in(hosts);
  std::string line, kept;
  bool changed = false;
  while (std::getline(in, line)) {
    const std::string owner = cluster_of_line(line);
    if (!owner.empty() && (name.empty() || owner == name)) {
      changed = true;
      continue;
    }
    kept += line + "\n";
  }
  if (changed) write_hosts(kept);
}

std::vector<std::string> clusters_in_hosts_file() {
  std::vector<std::string> names;
  std::istringstream in(read_hosts());
  std::string line;
  while (std::getline(in, line)) {
    const std::string owner = cluster_of_line(line);
    if (!owner.empty() && (names.empty() || names.back() != owner)) names.push_back(owner);
  }
  return names;
}

std::vector<std::string> mpirun_arguments(const ClusterSpec& s) {
  return {"--hostfile",
          hostfile_path(s).string(),
          "--mca",
          "plm_rsh_agent",
          agent_path(s).string(),
          "--mca",
          "btl",
          "tcp,self,vader",
          "--mca",
          "btl_tcp_if_include",
          s.subnet(),
          "--mca",
          "oob_tcp_if_include",
          s.subnet()};
}

std::map<std::string, std::string> mpirun_environment(const ClusterSpec& s) {
  return {{"OMPI_MCA_orte_default_hostfile", hostfile_path(s).string()},
          {"OMPI_MCA_plm_rsh_agent", agent_path(s).string()},
          {"OMPI_MCA_btl", "tcp,self,vader"},
          {"OMPI_MCA_btl_tcp_if_include", s.subnet()},
          {"OMPI_MCA_oob_tcp_if_include", s.subnet()},
          {"GRADSWEEP_CLUSTER", s.name},
          {"GRADSWEEP_CLUSTER_DILATION", std::to_string(s.dilation)}};
}

}  // namespace gradsweep::cluster
