#include "experiment/slurm_cluster.hpp"

#include "support/test_support.hpp"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gradsweep::test {
namespace fs = std::filesystem;

namespace {

const char* const kTools[] = {"munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "sinfo", "scontrol", "scancel"};

bool on_path(const std::string& tool) {
  std::istringstream path(std::getenv("PATH") != nullptr ? std::getenv("PATH") : "");
  std::string dir;
  while (std::getline(path, dir, ':'))
    if (::access((fs::path(dir) / tool).c_str(), X_OK) == 0) return true;
  // Debian puts the daemons in /usr/sbin, which a non-login PATH may lack.
  return ::access((fs::path("/usr/sbin") / tool).c_str(), X_OK) == 0;
}

// A port nobody listens on now: bind to port 0 and keep what the kernel chose. Another process could take
// it before slurmctld binds it; on a test machine that does not happen in practice.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("cannot find a free TCP port");
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

std::string short_hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::string host = name;
  return host.substr(0, host.find('.'));
}

std::string tail_of(const fs::path& file, int lines) {
  std::ifstream in(file);
  if (!in) return "(no " + file.filename().string() + ")\n";
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > static_cast<std::size_t>(lines) ? all.size() - lines : 0; i < all.size(); ++i)
    out += all[i] + "\n";
  return out;
}

pid_t read_pid(const fs::path& file) {
  std::ifstream in(file);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

// SIGTERM, then SIGKILL if the daemon is still there after `grace`.
void stop_by_pid_file(const fs::path& file, std::chrono::milliseconds grace = std::chrono::milliseconds(5000)) {
  const pid_t pid = read_pid(file);
  if (pid <= 1) return;
  if (::kill(pid, SIGTERM) != 0) return;
  const auto until = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < until) {
    if (::kill(pid, 0) != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(pid, SIGKILL);
}

// A test process that died (a crash, ctest's timeout) could not stop its daemons: stop them now, found by
// their directory's owner.pid naming a process that no longer exists.
void stop_orphaned_clusters() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    const fs::path d = entry.path();
    if (d.filename().string().rfind("gradsweep-slurm-", 0) != 0 || !fs::exists(d / "owner.pid")) continue;
    const pid_t owner = read_pid(d / "owner.pid");
    if (owner > 0 && (::kill(owner, 0) == 0 || errno == EPERM)) continue;  // still alive: not ours to stop
    stop_by_pid_file(d / "slurmd.pid");
    stop_by_pid_file(d / "slurmctld.pid");
    stop_by_pid_file(d / "munge" / "munged.pid");
    fs::remove_all(d, ec);
  }
}

std::unique_ptr<SlurmCluster>& cluster_slot() {
  static std::unique_ptr<SlurmCluster> cluster;
  return cluster;
}
bool& cluster_tried() {
  static bool tried = false;
  return tried;
}
std::string& skip_reason_slot() {
  static std::string reason;
  return reason;
}
std::string& start_error_slot() {
  static std::string error;
  return error;
}

// Stops the cluster after the last test of the process, whatever happened in the tests.
class SlurmClusterEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { cluster_slot().reset(); }
};
const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new SlurmClusterEnvironment);

}  // namespace

std::string SlurmCluster::unavailable_reason() {
  if (::geteuid() != 0) return "the Slurm daemons and munged need root; run the tests as root";
  for (const char* tool : kTools)
    if (!on_path(tool))
      return std::string(tool) + " not found on PATH or in /usr/sbin (scripts/install-deps.sh installs slurm-wlm and munge)";
  return "";
}

SlurmCluster::SlurmCluster(int timeout_s) : node_(short_hostname()) {
  stop_orphaned_clusters();
  std::string pattern = (fs::temp_directory_path() / "gradsweep-slurm-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  dir_ = pattern;
  // The daemons and munged's clients (srun on the node, the tests) must reach the socket inside.
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  std::ofstream(dir_ / "owner.pid") << ::getpid() << "\n";
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  write_config(free_port(), free_port(), cpus);
  // Every child from now on (sbatch, squeue, srun inside jobs) talks to this cluster.
  ::setenv("SLURM_CONF", conf().c_str(), 1);
  try {
    start_daemons();
    wait_until_idle(timeout_s);
  } catch (...) {
    stop();
    throw;
  }
}

SlurmCluster::~SlurmCluster() {
  stop();
  std::error_code ec;
  if (std::getenv("GRADSWEEP_KEEP_SLURM_DIR") == nullptr) fs::remove_all(dir_, ec);
}

void SlurmCluster::write_config(int ctld_port, int slurmd_port, int cpus) {
  const fs::path d = dir_;
  fs::create_directories(d / "state");
  fs::create_directories(d / "spool");
  fs::create_directories(d / "munge");
  // TmpFS: srun --mpi=pmix makes <TmpFS>/spmix_appdir_<uid>_<job>.<step> per step, /tmp by default. Every
  // test cluster numbers its jobs from 1, so a directory left by a step that was killed hard (a test ended by
  // ctest's timeout) made the next cluster's step 1.0 fail to launch ("File exists"). Here it goes away with
  // the cluster's directory.
  fs::create_directories(d / "tmp");
  fs::permissions(d / "munge", fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  // A key of our own: the tests do not depend on (or touch) /etc/munge, and every daemon here shares it.
  {
    std::random_device random;
    std::ofstream key(d / "munge" / "munge.key", std::ios::binary);
    for (int i = 0; i < 1024; ++i) key.put(static_cast<char>(random() & 0xff));
  }
  fs::permissions(d / "munge" / "munge.key", fs::perms::owner_read);
  std::ofstream conf(this->conf());
  conf << "# Generated by the gradsweep Slurm tests (tests/experiment/slurm_cluster.cpp)\n"
       << "ClusterName=gradsweep-test\n"
       << "SlurmctldHost=" << node_ << "\n"
       << "SlurmUser=root\n"
       << "SlurmctldPort=" << ctld_port << "\n"
       << "SlurmdPort=" << slurmd_port << "\n"
       << "AuthType=auth/munge\n"
       << "AuthInfo=socket=" << (d / "munge" / "munge.sock").string() << "\n"
       << "StateSaveLocation=" << (d / "state").string() << "\n"
       << "SlurmdSpoolDir=" << (d / "spool").string() << "/%n\n"
       << "SlurmctldPidFile=" << (d / "slurmctld.pid").string() << "\n"
       << "SlurmdPidFile=" << (d / "slurmd.pid").string() << "\n"
       << "SlurmctldLogFile=" << (d / "slurmctld.log").string() << "\n"
       << "SlurmdLogFile=" << (d / "slurmd.log").string() << "\n"
       << "ProctrackType=proctrack/linuxproc\n"
       << "TaskPlugin=task/none\n"
       << "JobAcctGatherType=jobacct_gather/none\n"
       << "SelectType=select/cons_tres\n"
       << "SelectTypeParameters=CR_Core\n"
       << "MpiDefault=none\n"
       << "TmpFS=" << (d / "tmp").string() << "\n"
       << "ReturnToService=2\n"
       // Ended jobs stay visible to scontrol (no accounting database here) for the launcher to read.
       << "MinJobAge=600\n"
       // Quick turnarounds: a test polls every second or two.
       << "SchedulerParameters=sched_interval=1\n"
       << "NodeName=" << node_ << " CPUs=" << cpus << " RealMemory=8000 State=UNKNOWN\n"
       << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE\n";
}

void SlurmCluster::start_daemons() {
  const fs::path m = dir_ / "munge";
  const std::string munged = "munged --force --num-threads=4 --socket=" + (m / "munge.sock").string() +
                             " --key-file=" + (m / "munge.key").string() + " --log-file=" + (m / "munged.log").string() +
                             " --pid-file=" + (m / "munged.pid").string() + " --seed-file=" + (m / "munged.seed").string();
  // The daemons fork into the background themselves; PATH gets /usr/sbin for a non-login shell.
  const std::string path = "PATH=/usr/sbin:/sbin:$PATH ";
  for (const std::string& command : {munged, std::string("slurmctld"), std::string("slurmd")}) {
    const CommandResult r = run_command(path + command + " 2>&1");
    if (r.exit_code != 0)
      throw std::runtime_error("`" + command + "` failed (exit code " + std::to_string(r.exit_code) + "): " + r.output +
                               "\n" + logs());
  }
}

void SlurmCluster::wait_until_idle(int timeout_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string last;
  while (std::chrono::steady_clock::now() < until) {
    const CommandResult r = run_command("sinfo -h -o %T 2>&1");
    last = r.output;
    if (r.exit_code == 0 && r.output.find("idle") != std::string::npos) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  throw std::runtime_error("the node did not become idle within " + std::to_string(timeout_s) +
                           " s; last sinfo: " + last + "\n" + logs());
}

void SlurmCluster::stop() {
  // Jobs first: slurmstepd and the ranks it started outlive slurmd.
  run_command("scancel --user=root >/dev/null 2>&1; sleep 1");
  stop_by_pid_file(dir_ / "slurmd.pid");
  stop_by_pid_file(dir_ / "slurmctld.pid");
  stop_by_pid_file(dir_ / "munge" / "munged.pid");
}

std::string SlurmCluster::logs(int lines) const {
  return "--- slurmctld.log\n" + tail_of(dir_ / "slurmctld.log", lines) + "--- slurmd.log\n" +
         tail_of(dir_ / "slurmd.log", lines) + "--- munged.log\n" + tail_of(dir_ / "munge" / "munged.log", lines);
}

SlurmCluster* slurm_cluster() {
  if (!cluster_tried()) {
    cluster_tried() = true;
    skip_reason_slot() = SlurmCluster::unavailable_reason();
    if (skip_reason_slot().empty()) {
      try {
        cluster_slot() = std::make_unique<SlurmCluster>();
      } catch (const std::exception& e) {
        start_error_slot() = e.what();
      }
    }
  }
  return cluster_slot().get();
}

const std::string& slurm_skip_reason() { return skip_reason_slot(); }
const std::string& slurm_start_error() { return start_error_slot(); }

}  // namespace gradsweep::test
