#include "experiment/slurm_multinode_cluster.hpp"

#include "cluster/bandwidth.hpp"
#include "cluster/cluster_lifecycle.hpp"
#include "cluster/system_command.hpp"
#include "experiment/slurm_daemons.hpp"
#include "support/test_support.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace gradsweep::test {
namespace fs = std::filesystem;

namespace {

// 1-7 characters of [a-z0-9]: "sm" and this process's id in base 36, so two test processes never pick the
// same name (their subnets come from `cluster up`'s lock).
std::string cluster_name() {
  static const char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string digits;
  for (long pid = ::getpid(); pid > 0; pid /= 36) digits.insert(digits.begin(), kDigits[pid % 36]);
  return "sm" + digits;
}

// Open MPI under srun: TCP between nodes on the cluster's subnet only (inside a node that is its one
// interface anyway), shared memory within a node, as `gradsweep cluster exec` sets for mpirun. PMIx keeps the
// job's data in its hash store: with the shared-memory one (PMIx 4.2's default) rank 0 of `srun --mpi=pmix`
// died of SIGSEGV at address nil at start in 1 of 3 rounds of the suite (openpmix#3019 has the pattern).
const char* const kMpiVariables[] = {"OMPI_MCA_btl", "OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_oob_tcp_if_include",
                                     "PMIX_MCA_gds"};

// What the watchdog does when the test process dies before its teardown (Ctrl-C, SIGKILL, a crash): stop
// the daemons, bring the cluster down, remove the directory.
void tear_down_orphan(const fs::path& dir, const std::string& name) {
  // The cluster first: that SIGKILLs the slurmds and the jobs' processes in the nodes at once, where
  // SIGTERM would give each slurmd seconds; then slurmctld and munged.
  try {
    if (fs::exists(cluster::state_dir(name))) cluster::bring_down(name);
  } catch (const std::exception& e) {
    std::cerr << "slurm multinode watchdog: " << e.what() << "\n";
  }
  stop_cluster_daemons(dir);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// A process of its own session (Ctrl-C reaches the test's process group, not it) that waits on a pipe
// only the test process writes to: one byte means the test tore everything down itself, end of file
// without one means the test process is gone. Returns the pipe's write end; *pid gets the watchdog's id.
int start_watchdog(const fs::path& dir, const std::string& name, pid_t* pid) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed for the Slurm watchdog");
  *pid = ::fork();
  if (*pid < 0) throw std::runtime_error("fork failed for the Slurm watchdog");
  if (*pid > 0) {
    ::close(fds[0]);
    return fds[1];
  }
  ::setsid();
  ::close(fds[1]);
  char byte = 0;
  ssize_t n = 0;
  do n = ::read(fds[0], &byte, 1);
  while (n < 0 && errno == EINTR);
  if (n != 1) tear_down_orphan(dir, name);
  ::_exit(0);
}

std::unique_ptr<SlurmMultinodeCluster>& cluster_slot() {
  static std::unique_ptr<SlurmMultinodeCluster> cluster;
  return cluster;
}
std::string& skip_reason_slot() {
  static std::string reason;
  return reason;
}
std::string& start_error_slot() {
  static std::string error;
  return error;
}

class MultinodeClusterEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { cluster_slot().reset(); }
};
const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new MultinodeClusterEnvironment);

}  // namespace

std::string SlurmMultinodeCluster::unavailable_reason() {
  if (std::string reason = slurm_unavailable_reason(); !reason.empty()) return reason;
  try {
    cluster::require_network_admin("a multi-node test Slurm");
  } catch (const std::exception& e) {
    return e.what();
  }
  if (cluster::find_on_path("nsenter").empty()) return "nsenter (util-linux) not found on PATH";
  return "";
}

SlurmMultinodeCluster::SlurmMultinodeCluster(int nodes, const std::string& link, int timeout_s) {
  stop_orphaned_clusters();
  cluster::ClusterSpec wanted;
  wanted.name = cluster_name();
  wanted.nodes = nodes;
  wanted.link_bits_per_second = cluster::parse_bandwidth(link, "link");
  dir_ = make_cluster_dir();
  try {
    // Before bring_up: the watchdog must not inherit the cluster's owner lock (it would keep it owned).
    watchdog_fd_ = start_watchdog(dir_, wanted.name, &watchdog_pid_);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    throw;
  }
  try {
    spec_ = cluster::bring_up(wanted, &owner_);
    const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // slurmctld listens on every address of the root namespace, the nodes reach it on the bridge. Each
    // slurmd has a namespace and an address of its own, so all can use one port.
    write_config(free_port(), free_port(), cpus);
    ::setenv("SLURM_CONF", conf().c_str(), 1);
    ::setenv(kMpiVariables[0], "tcp,self,vader", 1);
    ::setenv(kMpiVariables[1], spec_.subnet().c_str(), 1);
    ::setenv(kMpiVariables[2], spec_.subnet().c_str(), 1);
    ::setenv(kMpiVariables[3], "hash", 1);
    start_daemons();
    wait_until_idle(timeout_s);
  } catch (...) {
    stop();
    throw;
  }
}

SlurmMultinodeCluster::~SlurmMultinodeCluster() { stop(); }

void SlurmMultinodeCluster::write_config(int ctld_port, int slurmd_port, int cpus) {
  const fs::path d = dir_;
  for (int i = 0; i < nodes(); ++i) {
    fs::create_directories(d / "spool" / node(i));
    // The pmix plugin makes <TmpFS>/spmix_appdir_<uid>_<job>.<step> on every node of a step: with one TmpFS
    // the second node's slurmstepd failed ("File exists") and the step never launched.
    fs::create_directories(d / "tmp" / node(i));
  }
  std::ofstream conf(this->conf());
  conf << "# Generated by the gradsweep multi-node Slurm tests (tests/experiment/slurm_multinode_cluster.cpp)\n"
       << "ClusterName=gradsweep-" << spec_.name << "\n"
       << "SlurmctldHost=" << short_hostname() << "(" << spec_.bridge_address() << ")\n"
       << common_slurm_conf(d, ctld_port, slurmd_port) << "SlurmdSpoolDir=" << (d / "spool").string() << "/%n\n"
       << "SlurmdPidFile=" << (d / "slurmd-%n.pid").string() << "\n"
       << "SlurmdLogFile=" << (d / "slurmd-%n.log").string() << "\n"
       << "TmpFS=" << (d / "tmp").string() << "/%n\n";
  for (int i = 0; i < nodes(); ++i)
    conf << "NodeName=" << node(i) << " NodeAddr=" << address(i) << " CPUs=" << cpus
         << " RealMemory=8000 State=UNKNOWN\n";
  conf << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE\n";
}

void SlurmMultinodeCluster::start_daemons() {
  start_munged(dir_);
  start_daemon("slurmctld", logs());
  for (int i = 0; i < nodes(); ++i) {
    // nsenter enters only the node's network namespace: `ip netns exec` also mounts a /sys of its own,
    // without /sys/fs/cgroup, and slurmd 22.05 then stops ("Unable to initialize cgroup plugin") even with
    // proctrack/linuxproc. A UTS namespace of its own gives the node's jobs the node's host name.
    const std::string ns = node(i);
    start_daemon("nsenter --net=/run/netns/" + ns + " unshare --uts /bin/sh -c 'hostname " + ns +
                     " && exec slurmd -N " + ns + "'",
                 logs());
  }
}

void SlurmMultinodeCluster::wait_until_idle(int timeout_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string last;
  while (std::chrono::steady_clock::now() < until) {
    const CommandResult r = run_command("sinfo -h -N -o %T 2>&1");
    last = r.output;
    std::istringstream states(r.output);
    int idle = 0;
    for (std::string state; std::getline(states, state);) idle += state == "idle";
    if (r.exit_code == 0 && idle == nodes()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  throw std::runtime_error(std::to_string(nodes()) + " nodes did not become idle within " + std::to_string(timeout_s) +
                           " s; last sinfo: " + last + "\n" + logs());
}

void SlurmMultinodeCluster::stop() {
  // Jobs first: slurmstepd and the ranks it started outlive slurmd.
  if (fs::exists(conf())) run_command("scancel --user=root >/dev/null 2>&1; sleep 1");
  stop_cluster_daemons(dir_);
  ::unsetenv("SLURM_CONF");
  for (const char* variable : kMpiVariables) ::unsetenv(variable);
  // Whatever still runs in the nodes (a step slurmd left behind) is killed with the namespaces.
  if (owner_ != nullptr) {
    try {
      cluster::bring_down(spec_.name);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "bringing the emulated cluster down: " << e.what();
    }
    owner_.reset();
  }
  std::error_code ec;
  if (std::getenv("GRADSWEEP_KEEP_SLURM_DIR") == nullptr) fs::remove_all(dir_, ec);
  // Done: the watchdog may go.
  const char done = 'x';
  if (::write(watchdog_fd_, &done, 1) != 1) ADD_FAILURE() << "could not dismiss the Slurm watchdog";
  ::close(watchdog_fd_);
  ::waitpid(watchdog_pid_, nullptr, 0);
  watchdog_fd_ = -1;
}

std::uint64_t SlurmMultinodeCluster::bytes_sent_by(int i) const {
  std::ifstream in("/sys/class/net/" + spec_.veth_name(i) + "/statistics/rx_bytes");
  std::uint64_t bytes = 0;
  in >> bytes;
  return bytes;
}

std::string SlurmMultinodeCluster::logs(int lines) const {
  std::string out = "--- slurmctld.log\n" + tail_of(dir_ / "slurmctld.log", lines);
  for (int i = 0; i < nodes(); ++i)
    out += "--- slurmd-" + node(i) + ".log\n" + tail_of(dir_ / ("slurmd-" + node(i) + ".log"), lines);
  return out + "--- munged.log\n" + tail_of(dir_ / "munge" / "munged.log", lines);
}

SlurmMultinodeCluster* slurm_multinode_cluster(int nodes) {
  static bool checked = false;
  if (!checked) {
    checked = true;
    skip_reason_slot() = SlurmMultinodeCluster::unavailable_reason();
  }
  if (!skip_reason_slot().empty()) return nullptr;
  auto& slot = cluster_slot();
  if (slot != nullptr && slot->nodes() == nodes) return slot.get();
  slot.reset();
  try {
    slot = std::make_unique<SlurmMultinodeCluster>(nodes);
  } catch (const std::exception& e) {
    start_error_slot() = e.what();
  }
  return slot.get();
}

const std::string& slurm_multinode_skip_reason() { return skip_reason_slot(); }
const std::string& slurm_multinode_start_error() { return start_error_slot(); }

}  // namespace gradsweep::test
