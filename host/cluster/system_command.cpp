#include "cluster/system_command.hpp"

#include "env/environment.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

extern char** environ;

namespace gradsweep::cluster {
namespace {

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& a : argv) line += (line.empty() ? "" : " ") + a;
  return line;
}

// Reads both pipes to their end without letting either fill up and stall the child.
void drain(int out_fd, int err_fd, std::string& out, std::string& err) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&out, &err};
  int open = 2;
  char buffer[4096];
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
}

bool has_capability(int bit) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("CapEff:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> bit) & 1u;
  return false;
}

}  // namespace

CommandOutcome run_command(const std::vector<std::string>& argv) {
  CommandOutcome outcome;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return outcome;
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return outcome;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    outcome.err = argv[0] + ": cannot start (" + std::string(std::strerror(rc)) + ")";
    return outcome;
  }
  drain(out_pipe[0], err_pipe[0], outcome.out, outcome.err);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

std::string run_checked(const std::vector<std::string>& argv) {
  CommandOutcome o = run_command(argv);
  if (o.exit_code != 0) {
    while (!o.err.empty() && o.err.back() == '\n') o.err.pop_back();
    throw std::runtime_error("`" + command_line(argv) + "` failed (exit " + std::to_string(o.exit_code) +
                             "): " + (o.err.empty() ? "no message" : o.err));
  }
  return o.out;
}

std::string find_on_path(const std::string& tool) {
  std::stringstream dirs(env::text("PATH"));
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + tool;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

void require_network_admin(const std::string& action) {
  // unshare gives each node its own host name when Open MPI starts processes there (mpi_access.cpp).
  const std::pair<const char*, const char*> tools[] = {
      {"ip", "iproute2"}, {"tc", "iproute2"}, {"unshare", "util-linux"}};
  for (const auto& [tool, package] : tools)
    if (find_on_path(tool).empty())
      throw std::runtime_error(action + " needs `" + tool + "` (" + package +
                               ") on PATH, and it is not there (PATH=" + env::text("PATH") + "); nothing was made");
  constexpr int kCapSysAdmin = 21, kCapNetAdmin = 12;
  std::string missing;
  if (!has_capability(kCapNetAdmin)) missing += "CAP_NET_ADMIN";
  if (!has_capability(kCapSysAdmin)) missing += std::string(missing.empty() ? "" : " and ") + "CAP_SYS_ADMIN";
  if (!missing.empty())
    throw std::runtime_error(action +
                             " needs root: network namespaces, veth links and tc shaping need CAP_NET_ADMIN "
                             "and CAP_SYS_ADMIN, and this process (uid " +
                             std::to_string(::geteuid()) + ") lacks " + missing +
                             "; run it with sudo; nothing was made");
}

}  // namespace gradsweep::cluster
