#include "cli/cluster_forward.hpp"

#include "cluster_cli/cluster_command.hpp"

#include "experiment/launch/cluster_tool.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

namespace gradsweep::cli {

void run_cluster_tool_instead(const std::vector<std::string>& args) {
  const std::string tool = experiment::cluster_tool_path().string();
  std::vector<char*> argv{const_cast<char*>(tool.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();  // execv drops what is still buffered
  std::fflush(nullptr);
  ::execv(tool.c_str(), argv.data());
  throw std::runtime_error("gradsweep cluster: cannot run " + tool + ": " + std::strerror(errno));
}

void register_cluster_command(CLI::App& app, int argc, char** argv) {
  CLI::App* cluster = app.add_subcommand("cluster", "An emulated multi-node cluster on this machine (needs root)");
  cluster->require_subcommand(1);
  std::vector<std::string> forwarded;
  int i = 1;
  while (i < argc && std::string(argv[i]) != "cluster") ++i;
  for (++i; i < argc; ++i) forwarded.emplace_back(argv[i]);
  cluster_cli::add_cluster_subcommands(*cluster, [forwarded](const std::string&, const cluster_cli::ClusterArgs&) {
    run_cluster_tool_instead(forwarded);
  });
}

}  // namespace gradsweep::cli
