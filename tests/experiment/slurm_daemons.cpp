#include "experiment/slurm_daemons.hpp"

#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gradsweep::test {
namespace fs = std::filesystem;

namespace {

const char* const kTools[] = {"munged", "slurmctld", "slurmd",   "sbatch", "srun",
                              "squeue", "sinfo",     "scontrol", "scancel"};

bool on_path(const std::string& tool) {
  std::istringstream path(std::getenv("PATH") != nullptr ? std::getenv("PATH") : "");
  std::string dir;
  while (std::getline(path, dir, ':'))
    if (::access((fs::path(dir) / tool).c_str(), X_OK) == 0) return true;
  // Debian puts the daemons in /usr/sbin, which a non-login PATH may lack.
  return ::access((fs::path("/usr/sbin") / tool).c_str(), X_OK) == 0;
}

}  // namespace

std::string slurm_unavailable_reason() {
  if (::geteuid() != 0) return "the Slurm daemons and munged need root; run the tests as root";
  for (const char* tool : kTools)
    if (!on_path(tool))
      return std::string(tool) +
             " not found on PATH or in /usr/sbin (scripts/install-deps.sh installs slurm-wlm and munge)";
  return "";
}

// Bind to port 0 and keep what the kernel chose. Another process could take it before slurmctld binds it;
// on a test machine that does not happen in practice.
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

fs::path make_cluster_dir() {
  std::string pattern = (fs::temp_directory_path() / "gradsweep-slurm-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  const fs::path d = pattern;
  fs::permissions(d, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                         fs::perms::others_exec);
  std::ofstream(d / "owner.pid") << ::getpid() << "\n";
  fs::create_directories(d / "state");
  fs::create_directories(d / "spool");
  fs::create_directories(d / "munge");
  // TmpFS: srun --mpi=pmix makes <TmpFS>/spmix_appdir_<uid>_<job>.<step> per step, /tmp by default. Every
  // test cluster numbers its jobs from 1, so a directory left by a step that was killed hard (a test ended by
  // ctest's timeout) made the next cluster's step 1.0 fail to launch ("File exists"). Here it goes away with
  // the cluster's directory.
  fs::create_directories(d / "tmp");
  fs::permissions(d / "munge", fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  {
    std::random_device random;
    std::ofstream key(d / "munge" / "munge.key", std::ios::binary);
    for (int i = 0; i < 1024; ++i) key.put(static_cast<char>(random() & 0xff));
  }
  fs::permissions(d / "munge" / "munge.key", fs::perms::owner_read);
  return d;
}

void start_munged(const fs::path& dir) {
  const fs::path m = dir / "munge";
  start_daemon("munged --force --num-threads=4 --socket=" + (m / "munge.sock").string() +
                   " --key-file=" + (m / "munge.key").string() + " --log-file=" + (m / "munged.log").string() +
                   " --pid-file=" + (m / "munged.pid").string() + " --seed-file=" + (m / "munged.seed").string(),
               "--- munged.log\n" + tail_of(m / "munged.log", 30));
}

std::string common_slurm_conf(const fs::path& d, int ctld_port, int slurmd_port) {
  std::ostringstream conf;
  conf << "SlurmUser=root\n"
       << "SlurmctldPort=" << ctld_port << "\n"
       << "SlurmdPort=" << slurmd_port << "\n"
       << "AuthType=auth/munge\n"
       << "AuthInfo=socket=" << (d / "munge" / "munge.sock").string() << "\n"
       << "StateSaveLocation=" << (d / "state").string() << "\n"
       << "SlurmctldPidFile=" << (d / "slurmctld.pid").string() << "\n"
       << "SlurmctldLogFile=" << (d / "slurmctld.log").string() << "\n"
       << "ProctrackType=proctrack/linuxproc\n"
       << "TaskPlugin=task/none\n"
       << "JobAcctGatherType=jobacct_gather/none\n"
       << "SelectType=select/cons_tres\n"
       << "SelectTypeParameters=CR_Core\n"
       << "MpiDefault=none\n"
       << "ReturnToService=2\n"
       // Ended jobs stay visible to scontrol (no accounting database here) for the launcher to read.
       << "MinJobAge=600\n"
       // Quick turnarounds: a test polls every second or two.
       << "SchedulerParameters=sched_interval=1\n";
  return conf.str();
}

void start_daemon(const std::string& command, const std::string& logs) {
  // PATH gets /usr/sbin for a non-login shell.
  const CommandResult r = run_command("PATH=/usr/sbin:/sbin:$PATH " + command + " 2>&1");
  if (r.exit_code != 0)
    throw std::runtime_error("`" + command + "` failed (exit code " + std::to_string(r.exit_code) + "): " + r.output +
                             "\n" + logs);
}

pid_t read_pid(const fs::path& file) {
  std::ifstream in(file);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

void stop_by_pid_file(const fs::path& file, std::chrono::milliseconds grace) {
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

void stop_cluster_daemons(const fs::path& dir) {
  std::error_code ec;
  // slurmd.pid (one node) or slurmd-<node>.pid (emulated nodes): the nodes before their controller.
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("slurmd", 0) == 0 && entry.path().extension() == ".pid") stop_by_pid_file(entry.path());
  }
  stop_by_pid_file(dir / "slurmctld.pid");
  stop_by_pid_file(dir / "munge" / "munged.pid");
}

void stop_orphaned_clusters() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    const fs::path d = entry.path();
    if (d.filename().string().rfind("gradsweep-slurm-", 0) != 0 || !fs::exists(d / "owner.pid")) continue;
    const pid_t owner = read_pid(d / "owner.pid");
    if (owner > 0 && (::kill(owner, 0) == 0 || errno == EPERM)) continue;  // still alive: not ours to stop
    stop_cluster_daemons(d);
    fs::remove_all(d, ec);
  }
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

namespace {

// True while a slurmstepd of Slurm job `raw_id` ("1" for array task 1_0) runs on this machine (every node of
// a test cluster is: emulated nodes have network namespaces of their own, not process tables): its title is
// "slurmstepd: [<id>.batch]" or "[<id>.<step>]".
bool old_run_still_there(const std::string& raw_id) {
  return run_command("pgrep -f '^slurmstepd: \\[" + raw_id + "\\.' >/dev/null").exit_code == 0;
}

}  // namespace

// Slurm holds a requeued job back for about two minutes (its BeginTime) so that everything of the old run
// has reached slurmctld before the new one starts; a test does not wait that long, but it must not start
// the new run earlier than that either. Without accounting storage (this cluster) slurmctld applies a late
// batch-completion message of the old run to the new one (same job id, same node): the job then ended
// FAILED (NonZeroExitCode) with the old srun's exit code. So the hold is lifted only once the old run's
// slurmstepds are gone (the batch one reports the script's end before it exits) and the clock has moved past
// the second of the requeue (a launch credential from that second counts as revoked).
void release_requeued(const std::string& job, std::time_t requeued_at) {
  const CommandResult show = run_command("scontrol -o show job " + job);
  std::smatch m;
  const std::string raw_id = std::regex_search(show.output, m, std::regex("JobId=([0-9]+)")) ? m[1].str() : "";
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    const std::string state = run_command("squeue -h -j " + job + " -o '%T %r' 2>&1").output;
    if (state.rfind("RUNNING", 0) == 0) return;
    if (state.find("BeginTime") != std::string::npos && std::time(nullptr) > requeued_at + 1 && !raw_id.empty() &&
        !old_run_still_there(raw_id))
      run_command("scontrol update JobId=" + job + " StartTime=now");
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ADD_FAILURE() << "requeued job " << job << " did not run again within 60 s: " << show.output;
}

}  // namespace gradsweep::test
