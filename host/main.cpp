// gradsweep: data-parallel training experiments over pluggable strategies and models.
#include "cli/bench_comm_command.hpp"
#include "cli/export_command.hpp"
#include "cli/check_command.hpp"
#include "cli/cluster_forward.hpp"
#include "cli/plan_command.hpp"
#include "cli/plugins_command.hpp"
#include "cli/prepare_command.hpp"
#include "cli/project_command.hpp"
#include "cli/provenance_command.hpp"
#include "cli/reference_command.hpp"
#include "cli/report_command.hpp"
#include "cli/run_command.hpp"
#include "cli/status_command.hpp"
#include "cli/trace_command.hpp"
#include "cli/train_command.hpp"
#include "cli/unknown_command.hpp"

#include "device/torch_cuda.hpp"
#include "plugins/plugin_registry.hpp"

#include <gradsweep/sdk/build_fingerprint.hpp>

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>
#include <vector>

#ifndef GRADSWEEP_VERSION
#define GRADSWEEP_VERSION "0.0.0"
#endif

int main(int argc, char** argv) {
  // First, before anything asks LibTorch whether there is CUDA (host/device/torch_cuda.hpp).
  try {
    gradsweep::device::load_torch_cuda();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 2;
  }
  // Named, not after argv[0]: its usage lines (and docs/reference/cli.md) read the same however it is called.
  CLI::App app{"gradsweep: which way of sharing gradients trains my model fastest?", "gradsweep"};
  // "gradsweep 0.1.0 (SDK ABI 1.4; torch 2.15, cxx11-abi 1, gcc 12.2.0, cuda 13.0, nccl 2.30.7)", then
  // whether this process loaded LibTorch's CUDA half: "LibTorch CUDA not loaded: no NVIDIA driver ...".
  app.set_version_flag("--version", [] {
    return std::string("gradsweep ") + GRADSWEEP_VERSION + " (SDK ABI " + std::to_string(gradsweep::sdk::kAbiMajor) +
           "." + std::to_string(gradsweep::sdk::kAbiMinor) + "; " +
           gradsweep::plugins::describe(gradsweep::sdk::detail::this_build()) + ")\n" +
           gradsweep::device::describe_torch_cuda();
  });
  app.require_subcommand(1);
  gradsweep::cli::register_train_command(app);
  gradsweep::cli::register_plugins_command(app);
  gradsweep::cli::register_prepare_command(app);
  gradsweep::cli::register_bench_comm_command(app);
  gradsweep::cli::register_trace_command(app);                // docs/results.md, "Trace"
  gradsweep::cli::register_export_command(app);               // docs/models.md, "Export"
  gradsweep::cli::register_cluster_command(app, argc, argv);  // gradsweep-cluster's (docs/cluster.md)
  // Sweeps (docs/experiments.md).
  gradsweep::cli::register_plan_command(app);
  gradsweep::cli::register_run_command(app);
  gradsweep::cli::register_status_command(app);
  gradsweep::cli::register_report_command(app);
  gradsweep::cli::register_project_command(app);     // docs/projection.md
  gradsweep::cli::register_provenance_command(app);  // hidden: the Slurm batch script's
  gradsweep::cli::register_check_command(app);       // the conformance kit (docs/plugins.md)
  gradsweep::cli::register_reference_command(app);   // last: docs/reference/cli.md lists the commands above
  // Before CLI11, which would answer a mistyped command with "A subcommand is required" or the general help.
  if (const auto unknown = gradsweep::cli::unknown_command(app, std::vector<std::string>(argv + 1, argv + argc))) {
    std::cerr << "error: " << *unknown << std::endl;
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 2;
  }
  return 0;
}
