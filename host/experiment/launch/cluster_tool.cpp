#include "experiment/launch/cluster_tool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace gradsweep::experiment {
namespace fs = std::filesystem;
namespace {

struct Outcome {
  int status = 0;  // as waitpid reports it
  std::string out, err;
};

// Reads both pipes to their end together: a child that fills one while we wait on the other would stall.
void drain(int out_fd, int err_fd, Outcome& outcome) {
  std::array<pollfd, 2> fds{pollfd{out_fd, POLLIN, 0}, pollfd{err_fd, POLLIN, 0}};
  std::array<std::string*, 2> into{&outcome.out, &outcome.err};
  int open = 2;
  char buffer[4096];
  while (open > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;  // the sweep's own SIGINT handler: the tool goes on, and so do we
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        into[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
}

Outcome run(const std::string& tool, const std::vector<std::string>& args) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error("gradsweep-cluster: pipe: " + std::string(std::strerror(errno)));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    throw std::runtime_error("gradsweep-cluster: pipe: " + std::string(std::strerror(errno)));
  }
  std::vector<char*> argv{const_cast<char*>(tool.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::execv(tool.c_str(), argv.data());
    const std::string msg = "error: cannot run " + tool + ": " + std::strerror(errno) + "\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(out[0]);
    ::close(err[0]);
    throw std::runtime_error("gradsweep-cluster: fork failed: " + std::string(std::strerror(errno)));
  }
  Outcome outcome;
  drain(out[0], err[0], outcome);
  while (::waitpid(pid, &outcome.status, 0) < 0 && errno == EINTR) {
  }
  return outcome;
}

// "error: cluster 'x' is not up ...\n" -> "cluster 'x' is not up ...".
std::string tool_message(std::string err) {
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  const std::size_t last = err.rfind("error: ");
  return last == std::string::npos ? err : err.substr(last + 7);
}

}  // namespace

fs::path cluster_tool_path() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path tool = (ec ? fs::current_path() : self.parent_path()) / "gradsweep-cluster";
  if (::access(tool.c_str(), X_OK) != 0)
    throw std::runtime_error("the emulated cluster needs gradsweep-cluster beside " +
                             (ec ? std::string("gradsweep") : self.string()) + ", and there is no executable " +
                             tool.string() + " (install it with gradsweep, or build the gradsweep-cluster target)");
  return tool;
}

std::string run_cluster_tool(const std::vector<std::string>& args) {
  const std::string tool = cluster_tool_path().string();
  const Outcome outcome = run(tool, args);
  if (WIFEXITED(outcome.status) && WEXITSTATUS(outcome.status) == 0) return outcome.out;
  std::string message = tool_message(outcome.err);
  if (message.empty())
    message = "gradsweep-cluster " + (args.empty() ? std::string() : args.front()) +
              (WIFSIGNALED(outcome.status) ? " was killed by signal " + std::to_string(WTERMSIG(outcome.status))
                                           : " exited with status " + std::to_string(WEXITSTATUS(outcome.status))) +
              " and said nothing";
  throw std::runtime_error(message);
}

nlohmann::json run_cluster_tool_json(const std::vector<std::string>& args) {
  const std::string out = run_cluster_tool(args);
  nlohmann::json reply = nlohmann::json::parse(out, nullptr, false);
  if (reply.is_discarded())
    throw std::runtime_error("gradsweep-cluster " + (args.empty() ? std::string() : args.front()) +
                             " printed no JSON: " + out.substr(0, 200));
  return reply;
}

}  // namespace gradsweep::experiment
