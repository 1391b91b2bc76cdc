#pragma once
// A real Slurm on the test machine: munged, slurmctld and slurmd started from a configuration generated in
// a temporary directory (free ports, this host as the only node, every state, spool, log and pid file in
// that directory), and stopped again by their pid files. SLURM_CONF is exported, so sbatch, squeue, srun
// and anything the tests start talk to this cluster only.
//
// The daemons need root (munged and slurmd drop or check privileges) and the Debian packages slurm-wlm and
// munge (scripts/install-deps.sh). Without them the Slurm tests skip and say why; with them (CI) they run.
// A cluster that should start but does not is a failure, with the daemons' logs in the message.
//
// One cluster per test process, shared by its tests: started by the first test that asks for it and
// stopped by a GoogleTest environment after the last test (also when tests fail or throw). ctest runs each
// test in its own process, so each gets a fresh cluster (a few seconds).
#include "support/skip_rule.hpp"
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

namespace gradsweep::test {

class SlurmCluster {
 public:
  // Why this machine cannot run the daemons ("not root", "slurmctld not found on PATH"), or "" if it can.
  static std::string unavailable_reason();

  // Starts the daemons and waits until sinfo shows the node idle. Throws std::runtime_error with the
  // daemons' logs if they do not come up within `timeout_s`.
  explicit SlurmCluster(int timeout_s = 40);
  // Cancels every job of the cluster, then stops slurmd, slurmctld and munged by their pid files.
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path conf() const { return dir_ / "slurm.conf"; }
  const std::string& node() const { return node_; }
  // The last lines of the daemons' logs, for failure messages.
  std::string logs(int lines = 30) const;

 private:
  void write_config(int ctld_port, int slurmd_port, int cpus);
  void start_daemons();
  void wait_until_idle(int timeout_s);
  void stop();

  std::filesystem::path dir_;
  std::string node_;
};

// The running cluster, started on first use. nullptr when the machine cannot run Slurm
// (slurm_skip_reason() says why) or when the daemons failed to start (slurm_start_error() has their logs).
SlurmCluster* slurm_cluster();
const std::string& slurm_skip_reason();
const std::string& slurm_start_error();

}  // namespace gradsweep::test

// In a test body: skip with the reason when the machine cannot run Slurm; fail when it should and does not.
#define GRADSWEEP_REQUIRE_SLURM()                                                                         \
  do {                                                                                                    \
    if (::gradsweep::test::slurm_cluster() != nullptr) break;                                             \
    if (!::gradsweep::test::slurm_skip_reason().empty())                                                  \
      GRADSWEEP_SKIP_UNLESS_CI_AS_ROOT("Slurm tests skipped: " + ::gradsweep::test::slurm_skip_reason()); \
    FAIL() << "the test Slurm cluster did not start: " << ::gradsweep::test::slurm_start_error();         \
  } while (0)
