// Running `ip` and `tc` as child processes (no shell: names go through as single arguments), and the
// checks that must pass before a cluster is touched: the tools exist and this process may use them.
#pragma once

#include <string>
#include <vector>

namespace gradsweep::cluster {

struct CommandOutcome {
  int exit_code = -1;  // -1: could not start, or killed by a signal
  std::string out, err;
};

// Runs argv[0] (looked up on PATH) with the rest as arguments; never throws for a failing command.
CommandOutcome run_command(const std::vector<std::string>& argv);
// The same, but a non-zero exit throws std::runtime_error quoting the command line and its stderr.
std::string run_checked(const std::vector<std::string>& argv);

// Full path of `tool` on PATH, or "" if it is not there.
std::string find_on_path(const std::string& tool);

// Throws std::runtime_error saying what is missing: `ip`, `tc` or `unshare` not on PATH, or no CAP_NET_ADMIN and
// CAP_SYS_ADMIN (network namespaces are made by mounting under /run/netns). Called before anything is made.
void require_network_admin(const std::string& action);

}  // namespace gradsweep::cluster
