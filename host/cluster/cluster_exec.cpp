#include "cluster/cluster_exec.hpp"

#include "cluster/mpi_access.hpp"
#include "cluster/stranded_job.hpp"
#include "cluster/system_command.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace gradsweep::cluster {
namespace {

volatile sig_atomic_t g_child = 0;

void forward_signal(int sig) {
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), sig);
}

// Waits for the command; if it is an mpirun stranded by a cut link (stranded_job.hpp), kills it.
int wait_unless_stranded(const ClusterSpec& spec, pid_t pid) {
  StrandedJobWatch watch(spec);
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) return status;
    if (watch.stranded()) {
      std::cerr << "cluster exec: " << watch.why() << " (until TCP gives up, ~15 min); killing it" << std::endl;
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

int kill_processes_in(const ClusterSpec& spec) {
  int killed = 0;
  for (int i = 0; i < spec.nodes; ++i) {
    std::istringstream pids(run_command({"ip", "netns", "pids", spec.node_name(i)}).out);
    std::string pid;
    while (pids >> pid)
      if (::kill(static_cast<pid_t>(std::stol(pid)), SIGKILL) == 0) ++killed;
  }
  return killed;
}

int exec_on_cluster(const ClusterSpec& spec, const std::vector<std::string>& command) {
  if (command.empty()) throw std::invalid_argument("cluster exec: no command after `--` (e.g. -- mpirun -np 2 ...)");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("cluster exec: fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);  // the parent died before prctl took effect
    for (const auto& [key, value] : mpirun_environment(spec)) ::setenv(key.c_str(), value.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::cerr << "cluster exec: cannot run " << command[0] << ": " << std::strerror(errno) << std::endl;
    ::_exit(127);
  }
  g_child = pid;
  struct sigaction action {};
  action.sa_handler = forward_signal;
  ::sigemptyset(&action.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &action, nullptr);
  const int status = wait_unless_stranded(spec, pid);
  g_child = 0;
  const int left = kill_processes_in(spec);
  if (left > 0)
    std::cerr << "cluster exec: killed " << left << " process(es) left inside cluster " << spec.name << "\n";
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace gradsweep::cluster
