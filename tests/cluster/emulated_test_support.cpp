#include "emulated_test_support.hpp"

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace gradsweep::test {
namespace fs = std::filesystem;
namespace {
const char* kRootEnv = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ";
}

std::string missing_cluster_requirement() {
  if (::geteuid() != 0) return "not root: network namespaces need CAP_NET_ADMIN";
  const CommandResult r = run_command("ip netns list");
  if (r.exit_code != 0) return "`ip netns list` fails: " + r.output;
  if (run_command("tc -V").exit_code != 0) return "no `tc`";
  return "";
}

std::string objects_of(const std::string& name) {
  const std::string prefix = "gsc-" + name + "-";
  std::string found;
  for (const char* cmd : {"ip netns list", "ip -o link show", "tc qdisc show"}) {
    std::istringstream in(run_command(cmd).output);
    for (std::string l; std::getline(in, l);)
      if (l.find(prefix) != std::string::npos) found += std::string(cmd) + ": " + l + "\n";
  }
  if (read_text("/etc/hosts").find("gradsweep-cluster " + name + "\n") != std::string::npos)
    found += "/etc/hosts entry\n";
  if (fs::exists("/run/gradsweep/clusters/" + name)) found += "state directory\n";
  return found;
}

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in, nullptr, false);
}

std::string cluster_of(const fs::path& cell) {
  const nlohmann::json p = read_json(cell / "provenance.json");
  return p.is_object() && p.contains("cluster") ? p["cluster"].value("name", "") : "";
}

CommandResult run_sweep(const fs::path& exp, const fs::path& out, const std::string& flags, int seconds) {
  return run_command(std::string(kRootEnv) + "timeout -k 5 " + std::to_string(seconds) + " " +
                     gradsweep("run " + exp.string() + " --out " + out.string() + " " + flags));
}

pid_t start_sweep(const fs::path& exp, const fs::path& out, const fs::path& log) {
  const std::string cmd = std::string("exec env ") + kRootEnv +
                          gradsweep("run " + exp.string() + " --out " + out.string()) + " >" + log.string() + " 2>&1";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    ::_exit(127);
  }
  return pid;
}

int kill_ranks_in(const std::string& node_namespace) {
  std::istringstream pids(run_command("ip netns pids " + node_namespace).output);
  int killed = 0;
  for (std::string p; pids >> p;)
    if (run_command("tr '\\0' ' ' < /proc/" + p + "/cmdline").output.find(" train ") != std::string::npos &&
        ::kill(std::stoi(p), SIGKILL) == 0)
      ++killed;
  return killed;
}

}  // namespace gradsweep::test
