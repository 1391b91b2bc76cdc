#pragma once
// A real Slurm across the nodes of an emulated cluster (docs/cluster.md "Slurm across emulated nodes"): the
// cluster's namespaces as Slurm nodes, one slurmd in each under the node's name and address, slurmctld and
// munged in the root namespace, slurmctld listening on the cluster's bridge, which every node reaches.
// Jobs started by a slurmd live in its node's network and UTS namespaces: their host name is the node's,
// their traffic to other nodes crosses the shaped links. SLURM_CONF and Open MPI's interface settings
// (TCP between nodes on the cluster's subnet only) are exported, so srun, sbatch and `gradsweep run
// --launcher slurm` started by the tests land on this cluster.
//
// Needs root, slurm-wlm + munge, and what `gradsweep cluster up` needs (ip, tc, unshare); nsenter too.
// Without them the tests skip and say why. One cluster per test process, replaced when a test asks for
// another node count, stopped after the last test. If the test process dies first (Ctrl-C, SIGKILL, a
// crash), a watchdog process started with the cluster stops the daemons and brings the cluster down; were
// the watchdog killed too, the emulated cluster still belongs to the test process (an owner lock), so its
// namespaces, with the slurmds in them, go at the next `cluster up`, and its slurmctld and munged at the
// next Slurm test's start (slurm_daemons.hpp).
#include "support/skip_rule.hpp"
#include "cluster/cluster_owner.hpp"
#include "cluster/cluster_spec.hpp"

#include <gtest/gtest.h>
#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>

namespace gradsweep::test {

class SlurmMultinodeCluster {
 public:
  // Why this machine cannot run it, or "" if it can.
  static std::string unavailable_reason();

  // Brings up an emulated cluster of `nodes` nodes (links at `link`), the daemons, and waits until sinfo
  // shows every node idle. Throws std::runtime_error with the daemons' logs otherwise, leaving nothing.
  explicit SlurmMultinodeCluster(int nodes, const std::string& link = "1Gbit", int timeout_s = 60);
  // Cancels every job, stops the slurmds, slurmctld and munged, brings the emulated cluster down.
  ~SlurmMultinodeCluster();
  SlurmMultinodeCluster(const SlurmMultinodeCluster&) = delete;
  SlurmMultinodeCluster& operator=(const SlurmMultinodeCluster&) = delete;

  const cluster::ClusterSpec& spec() const { return spec_; }
  int nodes() const { return spec_.nodes; }
  std::string node(int i) const { return spec_.node_name(i); }
  std::string address(int i) const { return spec_.node_address(i); }
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path conf() const { return dir_ / "slurm.conf"; }
  // Bytes node i has sent over its link so far (the bridge end's receive counter).
  std::uint64_t bytes_sent_by(int i) const;
  // The last lines of the daemons' logs, for failure messages.
  std::string logs(int lines = 20) const;

 private:
  void write_config(int ctld_port, int slurmd_port, int cpus);
  void start_daemons();
  void wait_until_idle(int timeout_s);
  void stop();

  cluster::ClusterSpec spec_;
  std::unique_ptr<cluster::OwnerLock> owner_;
  std::filesystem::path dir_;
  int watchdog_fd_ = -1;
  pid_t watchdog_pid_ = -1;
};

// The running cluster of `nodes` nodes, started on first use (a cluster of another size is stopped first).
// nullptr when the machine cannot run it (slurm_multinode_skip_reason() says why) or when it failed to
// start (slurm_multinode_start_error() has the logs).
SlurmMultinodeCluster* slurm_multinode_cluster(int nodes);
const std::string& slurm_multinode_skip_reason();
const std::string& slurm_multinode_start_error();

}  // namespace gradsweep::test

// In a test body: a Slurm of `nodes` emulated nodes, or skip with the reason where the machine cannot run
// one; fail when it should and does not.
#define GRADSWEEP_REQUIRE_SLURM_NODES(nodes)                                                                   \
  do {                                                                                                         \
    if (::gradsweep::test::slurm_multinode_cluster(nodes) != nullptr) break;                                   \
    if (!::gradsweep::test::slurm_multinode_skip_reason().empty())                                             \
      GRADSWEEP_SKIP_UNLESS_CI_AS_ROOT("multi-node Slurm tests skipped: " +                                    \
                                       ::gradsweep::test::slurm_multinode_skip_reason());                      \
    FAIL() << "the multi-node test Slurm did not start: " << ::gradsweep::test::slurm_multinode_start_error(); \
  } while (0)
