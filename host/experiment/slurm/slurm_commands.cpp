#include "experiment/slurm/slurm_commands.hpp"
#include "util/trim.hpp"

#include "env/environment.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace gradsweep::experiment::slurm {
namespace fs = std::filesystem;

namespace {

std::string join(const std::vector<std::string>& words, const char* sep = " ") {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : sep) + w;
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!s.empty() && s.back() == sep) parts.emplace_back();
  return parts;
}

// "1234_5" -> array job "1234", task 5; anything else (a plain job, "1234_[1-3]") -> task -1.
void split_job_id(TaskState& t) {
  const auto underscore = t.job.find('_');
  t.array_job = t.job.substr(0, underscore);
  if (underscore == std::string::npos) return;
  const std::string index = t.job.substr(underscore + 1);
  if (!index.empty() && index.find_first_not_of("0123456789") == std::string::npos) t.task = std::stoi(index);
}

// Says what most likely went wrong when a Slurm client fails, from its own message.
std::string hint_for(const ProgramOutput& r) {
  const std::string& e = r.err;
  if (r.exit_code == 127) return " (is Slurm installed? Debian: apt-get install slurm-client)";
  if (e.find("Unable to contact slurm controller") != std::string::npos ||
      e.find("Connection refused") != std::string::npos)
    return " (is slurmctld running, and SLURM_CONF pointing at its slurm.conf?)";
  if (e.find("Munge") != std::string::npos || e.find("authentication") != std::string::npos)
    return " (is munged running with the cluster's key?)";
  return "";
}

[[noreturn]] void fail(const std::vector<std::string>& argv, const ProgramOutput& r) {
  std::string what = "`" + join(argv) + "` failed with exit code " + std::to_string(r.exit_code);
  const std::string message = util::trim(r.err.empty() ? r.out : r.err);
  if (!message.empty()) what += ": " + message;
  throw SlurmError(what + hint_for(r));
}

ProgramOutput run_or_throw(const std::vector<std::string>& argv) {
  require_slurm_tool(argv.front());
  ProgramOutput r = run_program(argv);
  if (r.exit_code != 0) fail(argv, r);
  return r;
}

// Reads both pipes until both close; poll() so that a child filling one pipe never blocks on it.
void drain(int out_fd, int err_fd, ProgramOutput& r) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open = 2;
  char buffer[4096];
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
}

}  // namespace

ProgramOutput run_program(const std::vector<std::string>& argv) {
  ProgramOutput r;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
    throw SlurmError(std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw SlurmError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execvp(args[0], args.data());
    const std::string message = std::string(args[0]) + ": " + std::strerror(errno) + "\n";
    (void)!::write(2, message.data(), message.size());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  drain(out_pipe[0], err_pipe[0], r);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

void require_slurm_tool(const std::string& tool) {
  for (const std::string& dir : split(env::text("PATH"), ':')) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / tool;
    if (::access(candidate.c_str(), X_OK) == 0) return;
  }
  throw SlurmError(tool +
                   " not found on PATH: the Slurm launcher needs the Slurm client commands "
                   "(Debian: apt-get install slurm-client), or use --launcher local");
}

std::string sbatch_submit(const std::string& script) {
  const ProgramOutput r = run_or_throw({"sbatch", "--parsable", script});
  // --parsable prints "jobid" or "jobid;cluster".
  std::string id = util::trim(r.out);
  id = id.substr(0, id.find(';'));
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    throw SlurmError("sbatch --parsable " + script + " printed '" + util::trim(r.out) + "', not a job id");
  return id;
}

std::vector<TaskState> parse_squeue(const std::string& text) {
  std::vector<TaskState> tasks;
  for (const std::string& line : split(text, '\n')) {
    const auto fields = split(util::trim(line), '|');
    if (fields.size() < 2) continue;
    TaskState t;
    t.job = fields[0];
    t.state = fields[1];
    if (fields.size() > 2 && fields[2] != "None") t.reason = fields[2];
    split_job_id(t);
    tasks.push_back(t);
  }
  return tasks;
}

std::vector<TaskState> squeue_tasks(const std::vector<std::string>& array_jobs) {
  if (array_jobs.empty()) return {};
  const std::vector<std::string> argv = {"squeue", "-h", "-r", "--jobs=" + join(array_jobs, ","), "-o", "%i|%T|%r"};
  require_slurm_tool("squeue");
  const ProgramOutput r = run_program(argv);
  // A job that ended MinJobAge ago is unknown to the controller: squeue says "Invalid job id".
  if (r.exit_code != 0 && r.err.find("Invalid job id") != std::string::npos) return {};
  if (r.exit_code != 0) fail(argv, r);
  return parse_squeue(r.out);
}

std::vector<TaskState> parse_sacct(const std::string& text) {
  std::vector<TaskState> tasks;
  for (const std::string& line : split(text, '\n')) {
    const auto fields = split(util::trim(line), '|');
    if (fields.size() < 3) continue;
    TaskState t;
    t.job = fields[0];
    // "CANCELLED by 0" -> CANCELLED; the rest is kept as the reason.
    const auto space = fields[1].find(' ');
    t.state = fields[1].substr(0, space);
    if (space != std::string::npos) t.reason = fields[1].substr(space + 1);
    t.exit_code = fields[2];
    if (fields.size() > 3 && fields[3] != "None" && !fields[3].empty())
      t.reason = t.reason.empty() ? fields[3] : t.reason + ", " + fields[3];
    split_job_id(t);
    tasks.push_back(t);
  }
  return tasks;
}

std::vector<TaskState> parse_scontrol(const std::string& text) {
  std::vector<TaskState> tasks;
  for (const std::string& line : split(text, '\n')) {
    TaskState t;
    std::string job_id, array_job, array_task;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      const auto eq = word.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
      if (key == "JobId")
        job_id = value;
      else if (key == "ArrayJobId")
        array_job = value;
      else if (key == "ArrayTaskId")
        array_task = value;
      else if (key == "JobState")
        t.state = value;
      else if (key == "Reason" && value != "None")
        t.reason = value;
      else if (key == "ExitCode")
        t.exit_code = value;
    }
    if (job_id.empty()) continue;
    t.job = array_job.empty() ? job_id : array_job + "_" + array_task;
    split_job_id(t);
    tasks.push_back(t);
  }
  return tasks;
}

std::vector<TaskState> ended_tasks(const std::string& array_job) {
  require_slurm_tool("sacct");
  const std::vector<std::string> sacct = {"sacct", "-n",      "-P", "-X",
                                          "-j",    array_job, "-o", "JobID,State,ExitCode,Reason"};
  const ProgramOutput r = run_program(sacct);
  if (r.exit_code == 0 && r.err.find("accounting storage is disabled") == std::string::npos) return parse_sacct(r.out);
  // No accounting database: the controller still knows jobs that ended less than MinJobAge ago.
  const std::vector<std::string> scontrol = {"scontrol", "-o", "show", "job", array_job};
  const ProgramOutput s = run_program(scontrol);
  if (s.exit_code != 0 && s.err.find("Invalid job id") != std::string::npos) return {};
  if (s.exit_code != 0) fail(scontrol, s);
  return parse_scontrol(s.out);
}

void scancel(const std::vector<std::string>& jobs) {
  if (jobs.empty()) return;
  std::vector<std::string> argv = {"scancel"};
  argv.insert(argv.end(), jobs.begin(), jobs.end());
  run_or_throw(argv);
}

}  // namespace gradsweep::experiment::slurm
