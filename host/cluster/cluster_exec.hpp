// `gradsweep cluster exec NAME -- COMMAND...`: runs COMMAND (typically mpirun) with the cluster's MPI
// settings in its environment. SIGINT/SIGTERM are passed on to it; if this process is killed outright the
// kernel sends COMMAND SIGTERM (PR_SET_PDEATHSIG); either way no process is left inside the cluster's
// namespaces afterwards.
#pragma once

#include "cluster/cluster_spec.hpp"

#include <string>
#include <vector>

namespace gradsweep::cluster {

// Returns COMMAND's exit status (128 + signal if it died of one).
int exec_on_cluster(const ClusterSpec& spec, const std::vector<std::string>& command);

// Kills (SIGKILL) whatever still runs inside the cluster's namespaces; returns how many processes.
int kill_processes_in(const ClusterSpec& spec);

}  // namespace gradsweep::cluster
