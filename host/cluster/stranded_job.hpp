// An mpirun stranded by a cut link. When a node's link goes down mid-job, the ranks' watchdog ends the job
// (MPI_Abort) and every rank exits, also the one on the cut node (its own watchdog fires), but mpirun then
// waits for the Open MPI daemon (orted) on that node to confirm the kill: its TCP connection to the daemon
// retransmits into silence until the kernel gives up (tcp_retries2: about 15 minutes), and no MCA setting
// of Open MPI 4.1 bounds that wait (measured: mpirun still there 150 s after the abort, also after SIGTERM
// to the orted; only SIGKILL ends it). On a real cluster it is the same, so a launcher must not wait for
// mpirun alone: this watch says when no rank is left on any node while some node's link is down, for longer
// than a grace period (a healthy mpirun exits within a second of its last rank). The caller then kills
// mpirun; what happened to the job is in the ranks' logs and the flight recorder's verdict.
#pragma once

#include "cluster/cluster_spec.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::cluster {

class StrandedJobWatch {
 public:
  using Clock = std::chrono::steady_clock;
  explicit StrandedJobWatch(ClusterSpec spec, std::chrono::duration<double> grace = std::chrono::seconds(5));

  // Poll it while mpirun runs (it looks at most once a second: one scan of /proc, and a few /sys reads).
  // True once the job's ranks have run on the nodes and, for the grace period, some node's link has been
  // down and only Open MPI's daemons (orted and the rsh agent's shell above it) have been left there.
  bool stranded();
  // "node 3's link is down and no rank is left on the nodes (only Open MPI's daemons): mpirun waits for an
  // orted it cannot reach", for the caller's message once stranded() said so.
  std::string why() const;

 private:
  ClusterSpec spec_;
  std::chrono::duration<double> grace_;
  Clock::time_point last_look_{};
  std::optional<Clock::time_point> since_;  // when the stranded state was first seen, while it lasts
  std::vector<int> down_;
  bool seen_ranks_ = false;
};

// The nodes whose link is not up, from /sys (the bridge's end: "down" when set down there, "lowerlayerdown"
// when the node's end is); no child process, so it can be polled.
std::vector<int> nodes_link_not_up(const ClusterSpec& spec);

// Whether some process other than Open MPI's daemons runs inside the cluster's node namespaces (by
// /proc/PID/ns/net against /run/netns/NODE).
bool ranks_left_on_nodes(const ClusterSpec& spec);

}  // namespace gradsweep::cluster
