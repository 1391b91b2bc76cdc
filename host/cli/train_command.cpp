#include "cli/train_command.hpp"

#include "comm/host_communicator.hpp"
#include "comm/mpi_runtime.hpp"
#include "config/cell_config.hpp"
#include "plugins/plugin_registry.hpp"
#include "services/logging.hpp"
#include "train/trainer.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <stdexcept>

namespace gradsweep::host {
namespace fs = std::filesystem;

namespace {
struct TrainArgs {
  std::string config;
  std::string out;
  std::vector<std::string> overrides;
  bool fresh = false;
  std::int64_t stop_after = 0;
};

// Exit code of a job that one rank's error ends (the same as main's for a one-rank job).
constexpr int kRankErrorExitCode = 2;

// The job's communicator: MPI when an MPI launcher started this process (mpirun, srun) or
// GRADSWEEP_COMM=mpi asks for it; the one-rank backend otherwise, or when GRADSWEEP_COMM=local.
std::unique_ptr<HostCommunicator> make_job_communicator() {
  const char* env = std::getenv("GRADSWEEP_COMM");
  const std::string choice = env != nullptr && *env != '\0' ? env : "auto";
  if (choice != "auto" && choice != "mpi" && choice != "local")
    throw std::runtime_error("GRADSWEEP_COMM='" + choice + "': expected auto, mpi or local");
  if (choice == "mpi" || (choice == "auto" && mpi::launched_by_mpi())) return make_mpi_communicator();
  return make_local_communicator();
}

void log_communicator(const HostCommunicator& comm) {
  if (std::string(comm.backend()) != "mpi") {
    spdlog::info("communicator: {} (one rank)", comm.backend());
    if (mpi::launched_by_mpi())
      spdlog::warn("started by an MPI launcher, but GRADSWEEP_COMM=local: every process trains alone as rank 0");
    return;
  }
  const int level = mpi::ensure_initialized();
  spdlog::info("communicator: mpi, rank {} of {} ({} of {} on this node), {}", comm.rank(), comm.size(),
               comm.local_rank(), comm.local_size(), mpi::thread_level_name(level));
  if (!mpi::is_thread_multiple(level))
    spdlog::warn("MPI granted {} only: strategies must not call the communicator from more than one thread at once",
                 mpi::thread_level_name(level));
}

// A rank that cannot go on, in a job of several: the other ranks may already be waiting in a collective
// for this one, and would wait forever if only this process ended (Open MPI's MPI_Finalize waits for
// every rank too). Say why here, on the failing rank (its log file gets it too), then end every rank.
[[noreturn]] void end_job(const HostCommunicator& comm, const std::string& why) {
  spdlog::error("{}", why);
  spdlog::error("ending all {} ranks of the job (MPI_Abort, exit code {})", comm.size(), kRankErrorExitCode);
  spdlog::default_logger()->flush();
  mpi::abort_job(kRankErrorExitCode);
}

void train(const TrainArgs& args, HostCommunicator& comm) {
  const fs::path out(args.out);
  fs::create_directories(out);
  init_logging(comm.rank(), out / ("rank-" + std::to_string(comm.rank()) + ".log"));
  log_communicator(comm);
  TrainRequest request{load_cell_config(args.config, args.overrides), out, !args.fresh, args.stop_after};
  PluginRegistry registry;
  registry.scan(PluginRegistry::search_path(request.config.plugin_paths));
  const nlohmann::json summary = train_cell(request, registry, comm);
  if (summary["status"] != "ok") return;
  if (comm.rank() == 0)
    std::cout << "summary: " << summary["model"].get<std::string>() << " / " << summary["strategy"].get<std::string>()
              << " x" << summary["world_size"] << ": final train loss " << summary["final_train_loss"]
              << ", val loss " << summary["val_loss"] << " (ppl " << summary["val_ppl"] << "), "
              << summary["tokens_per_sec"].get<double>() << " tokens/s, MFU " << summary["mfu"].get<double>()
              << " -> " << (out / "summary.json").string() << std::endl;
}

}  // namespace

void register_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Train one cell (one configuration) on this rank");
  cmd->add_option("config", args->config, "Cell configuration (YAML); see docs/configuration.md")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out,-o", args->out, "Cell directory for metrics.jsonl, summary.json, checkpoint/")->required();
  cmd->add_option("--set", args->overrides, "Override a key: --set train.lr=3e-4 (repeatable)");
  cmd->add_flag("--fresh", args->fresh, "Ignore an existing checkpoint and start from step 0");
  cmd->add_option("--stop-after", args->stop_after,
                  "End after N steps of this invocation without a final checkpoint, as an interruption would "
                  "(for testing resume and for time-sliced allocations)");
  cmd->callback([args] {
    std::unique_ptr<HostCommunicator> comm = make_job_communicator();
    init_logging(comm->rank());  // every line names its rank, even before the log file exists
    try {
      train(*args, *comm);
    } catch (const c10::Error& e) {
      if (comm->size() == 1) throw;  // main prints it and exits 2
      end_job(*comm, e.what_without_backtrace());
    } catch (const std::exception& e) {
      if (comm->size() == 1) throw;
      end_job(*comm, e.what());
    }
  });
}

}  // namespace gradsweep::host
