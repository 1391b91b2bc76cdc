#pragma once
// What the test Slurm clusters (slurm_cluster.hpp on this host, slurm_multinode_cluster.hpp across emulated
// nodes) share: whether this machine can run the daemons, a private munged, ports, pid files, logs, and
// stopping the daemons of a test process that died before it could.
//
// Also releasing a requeued job (both clusters' requeue tests).
//
// Every cluster lives in a directory /tmp/gradsweep-slurm-XXXXXX holding owner.pid (the test process),
// slurmctld.pid, munge/munged.pid and the slurmd pid files; stop_orphaned_clusters() finds them by that.
#include <chrono>
#include <ctime>
#include <filesystem>
#include <string>

#include <sys/types.h>

namespace gradsweep::test {

// Why this machine cannot run the daemons ("not root", "slurmctld not found on PATH"), or "" if it can.
std::string slurm_unavailable_reason();

// A port nobody listens on now in this network namespace.
int free_port();
std::string short_hostname();

// The directory of a new cluster: created mode 0755 (the daemons and munged's clients must reach inside),
// with owner.pid, state/, tmp/ and munge/ (a key of its own: the tests never touch /etc/munge).
std::filesystem::path make_cluster_dir();
// Starts munged on <dir>/munge/munge.sock; throws with its log if it does not start.
void start_munged(const std::filesystem::path& dir);
// The slurm.conf lines every test cluster has: auth through that munged, state, pid files and logs in
// `dir`, no cgroups (linuxproc, task/none), quick scheduling, ended jobs visible for 10 minutes.
std::string common_slurm_conf(const std::filesystem::path& dir, int ctld_port, int slurmd_port);

// Runs a daemon's start command (it forks into the background); throws with `logs` if it fails.
void start_daemon(const std::string& command, const std::string& logs);

pid_t read_pid(const std::filesystem::path& file);
// SIGTERM, then SIGKILL if the daemon is still there after `grace`.
void stop_by_pid_file(const std::filesystem::path& file,
                      std::chrono::milliseconds grace = std::chrono::milliseconds(5000));
// Stops every *.pid daemon of `dir` (slurmds, slurmctld, munged: in that order).
void stop_cluster_daemons(const std::filesystem::path& dir);
// Clusters whose owner.pid names a process that no longer exists (a crash, ctest's timeout, Ctrl-C): their
// daemons are stopped and their directories removed.
void stop_orphaned_clusters();

std::string tail_of(const std::filesystem::path& file, int lines);

// After `scontrol requeue <job>` at `requeued_at`: lifts Slurm's hold on the job as early as is safe and
// waits until it runs again (a test failure if not within 60 s). Why not at once: slurm_daemons.cpp.
void release_requeued(const std::string& job, std::time_t requeued_at);

}  // namespace gradsweep::test
