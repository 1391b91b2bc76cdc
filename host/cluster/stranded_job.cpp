#include "cluster/stranded_job.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace gradsweep::cluster {
namespace fs = std::filesystem;
namespace {

std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// The inode that identifies a network namespace (what /proc/PID/ns/net points to), or 0.
ino_t namespace_inode(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

struct ProcessInfo {
  std::string comm;
  long ppid = 0;
};

// /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses, so split at the last ')'.
bool read_process(const fs::path& dir, ProcessInfo& info) {
  const std::string stat = first_line(dir / "stat");
  const std::size_t open = stat.find('('), close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  info.comm = stat.substr(open + 1, close - open - 1);
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  return static_cast<bool>(rest >> state >> info.ppid);
}

}  // namespace

std::vector<int> nodes_link_not_up(const ClusterSpec& spec) {
  std::vector<int> down;
  for (int node = 0; node < spec.nodes; ++node)
    if (first_line(fs::path("/sys/class/net") / spec.veth_name(node) / "operstate") != "up") down.push_back(node);
  return down;
}

bool ranks_left_on_nodes(const ClusterSpec& spec) {
  std::set<ino_t> nodes;
  for (int node = 0; node < spec.nodes; ++node)
    if (const ino_t ino = namespace_inode(fs::path("/run/netns") / spec.node_name(node)); ino != 0) nodes.insert(ino);
  std::map<long, ProcessInfo> inside;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    ProcessInfo info;
    if (nodes.count(namespace_inode(entry.path() / "ns" / "net")) == 0 || !read_process(entry.path(), info)) continue;
    inside[std::stol(name)] = info;
  }
  // Open MPI's daemons: every orted, and the shell the rsh agent runs it under. Anything else is the job's.
  std::set<long> daemons;
  for (const auto& [pid, info] : inside)
    if (info.comm == "orted") daemons.insert({pid, info.ppid});
  for (const auto& [pid, info] : inside)
    if (daemons.count(pid) == 0) return true;
  return false;
}

StrandedJobWatch::StrandedJobWatch(ClusterSpec spec, std::chrono::duration<double> grace)
    : spec_(std::move(spec)), grace_(grace) {}

bool StrandedJobWatch::stranded() {
  const Clock::time_point now = Clock::now();
  if (now - last_look_ < std::chrono::seconds(1)) return since_ && now - *since_ >= grace_;
  last_look_ = now;
  // Only a job whose ranks ran and are gone: a command that never put a rank on the nodes (a script that
  // runs mpirun later, `sleep`) is not mpirun waiting for its daemons.
  const bool ranks = ranks_left_on_nodes(spec_);
  seen_ranks_ = seen_ranks_ || ranks;
  down_ = ranks || !seen_ranks_ ? std::vector<int>{} : nodes_link_not_up(spec_);
  if (down_.empty()) {
    since_.reset();
    return false;
  }
  if (!since_) since_ = now;
  return now - *since_ >= grace_;
}

std::string StrandedJobWatch::why() const {
  std::string nodes;
  for (const int n : down_) nodes += (nodes.empty() ? "" : ",") + std::to_string(n);
  return std::string(down_.size() == 1 ? "node " : "nodes ") + nodes +
         (down_.size() == 1 ? "'s link is" : "' links are") + " down and no rank has been left on the nodes for " +
         std::to_string(static_cast<int>(grace_.count())) +
         " s (only Open MPI's daemons): mpirun waits for an orted it cannot reach";
}

}  // namespace gradsweep::cluster
