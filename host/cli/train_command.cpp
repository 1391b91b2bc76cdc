#include "cli/train_command.hpp"

#include "comm/registry/backend_registry.hpp"
#include "comm/forensics/collective_forensics.hpp"
#include "comm/forensics/collective_timeout.hpp"
#include "comm/nccl/nccl_backend.hpp"
#include "comm/core/host_communicator.hpp"
#include "comm/mpi/mpi_runtime.hpp"
#include "config/cell_config.hpp"
#include "config/comm_choice.hpp"
#include "env/environment.hpp"
#include "plugins/plugin_registry.hpp"
#include "services/logging.hpp"
#include "train/trainer.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <stdexcept>

namespace gradsweep::cli {
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

// The job's communicator, as config/comm_choice.hpp decides from runtime.comm, GRADSWEEP_COMM, the
// device, the build and the launcher.
struct JobCommunicator {
  std::unique_ptr<comm::HostCommunicator> comm;
  config::CommDecision decision;
  // Read before MPI starts: an MPI singleton's own start sets some of the launcher variables.
  bool launched_by_mpi;
};

JobCommunicator make_job_communicator(const config::CellConfig& config) {
  config::CommRequest request;
  request.config_choice = config.comm;
  request.config_file = config.file;
  request.env_choice = env::text("GRADSWEEP_COMM");
  request.device = config.device;
  request.nccl_built = comm::nccl_built();
  request.launched_by_mpi = comm::mpi::launched_by_mpi();
  JobCommunicator job{nullptr, config::choose_comm(request), request.launched_by_mpi};
  comm::set_configured_comm_timeout(config.comm_timeout);
  comm::forensics::set_configured_check(config.check_collectives);
  try {
    job.comm = comm::make_communicator(job.decision.backend, comm::BackendOptions{config.device});
  } catch (const std::exception& e) {
    // Once MPI runs under a launcher, other ranks may be waiting for this one (the NCCL backend
    // broadcasts its unique id over MPI): end them all rather than leave them there.
    if (!job.launched_by_mpi || !comm::mpi::active()) throw;
    spdlog::error("creating the {} communicator failed: {}", job.decision.backend, e.what());
    spdlog::error("ending every rank of the job (MPI_Abort, exit code {})", kRankErrorExitCode);
    spdlog::default_logger()->flush();
    comm::mpi::abort_job(kRankErrorExitCode);
  }
  return job;
}

void log_communicator(const JobCommunicator& job) {
  const comm::HostCommunicator& comm = *job.comm;
  const std::string backend = comm.backend();
  spdlog::info("communicator chosen by {}", job.decision.why);
  if (backend == "local") {
    spdlog::info("communicator: local (one rank)");
    if (job.launched_by_mpi)
      spdlog::warn("started by an MPI launcher, but the communicator is local: every process trains alone as rank 0");
    return;
  }
  if (backend == "nccl") {
#if defined(GRADSWEEP_WITH_NCCL) && GRADSWEEP_WITH_NCCL
    spdlog::info("communicator: nccl, rank {} of {} ({} of {} on this node), {}", comm.rank(), comm.size(),
                 comm.local_rank(), comm.local_size(), comm::describe_nccl_communicator(comm));
#endif
    return;
  }
  const int level = comm::mpi::ensure_initialized();
  spdlog::info("communicator: mpi, rank {} of {} ({} of {} on this node), {}", comm.rank(), comm.size(),
               comm.local_rank(), comm.local_size(), comm::mpi::thread_level_name(level));
  if (!job.launched_by_mpi) spdlog::info("no MPI launcher started this process: MPI runs as a singleton (one rank)");
  if (!comm::mpi::is_thread_multiple(level))
    spdlog::warn("MPI granted {} only: strategies must not call the communicator from more than one thread at once",
                 comm::mpi::thread_level_name(level));
}

// A rank that cannot go on, in a job of several: the other ranks may already be waiting in a collective
// for this one, and would wait forever if only this process ended (Open MPI's MPI_Finalize waits for
// every rank too). Say why here, on the failing rank (its log file gets it too), then end every rank.
[[noreturn]] void end_job(const comm::HostCommunicator& comm, const std::string& why) {
  spdlog::error("{}", why);
  comm::forensics::on_rank_failure(why);  // this rank's flight recorder, and the others' while they can answer
  spdlog::error("ending all {} ranks of the job (MPI_Abort, exit code {})", comm.size(), kRankErrorExitCode);
  spdlog::default_logger()->flush();
  comm::mpi::abort_job(kRankErrorExitCode);
}

void train(const TrainArgs& args, config::CellConfig config, const JobCommunicator& job) {
  comm::HostCommunicator& comm = *job.comm;
  const fs::path out(args.out);
  fs::create_directories(out);
  services::init_logging(comm.rank(), out / ("rank-" + std::to_string(comm.rank()) + ".log"));
  comm::forensics::set_directory(out, comm.rank());
  log_communicator(job);
  train::TrainRequest request{std::move(config), out, !args.fresh, args.stop_after};
  plugins::PluginRegistry registry;
  registry.scan(plugins::PluginRegistry::search_path(request.config.plugin_paths));
  const nlohmann::json summary = train::train_cell(request, registry, comm);
  if (summary["status"] != "ok") return;
  if (comm.rank() == 0)
    std::cout << "summary: " << summary["model"].get<std::string>() << " / " << summary["strategy"].get<std::string>()
              << " x" << summary["world_size"] << ": final train loss " << summary["final_train_loss"] << ", val loss "
              << summary["val_loss"] << " (ppl " << summary["val_ppl"] << "), "
              << summary["tokens_per_sec"].get<double>() << " tokens/s, MFU " << summary["mfu"].get<double>()
              << (summary["mfu_flag"] == "" ? "" : " (" + summary["mfu_flag"].get<std::string>() + ")") << " -> "
              << (out / "summary.json").string() << std::endl;
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
    // The configuration comes first because it names the backend. Its errors come before any
    // communication and are the same on every rank: each process reports them (main, exit code 2) and
    // no rank is left waiting for another.
    config::CellConfig config = config::load_cell_config(args->config, args->overrides);
    const JobCommunicator job = make_job_communicator(config);
    comm::HostCommunicator* comm = job.comm.get();
    services::init_logging(comm->rank());  // every line names its rank, even before the log file exists
    try {
      train(*args, std::move(config), job);
    } catch (const c10::Error& e) {
      if (comm->size() == 1) throw;  // main prints it and exits 2
      end_job(*comm, e.what_without_backtrace());
    } catch (const std::exception& e) {
      if (comm->size() == 1) throw;
      end_job(*comm, e.what());
    }
  });
}

}  // namespace gradsweep::cli
