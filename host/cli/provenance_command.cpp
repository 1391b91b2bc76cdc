#include "cli/provenance_command.hpp"

#include "runs/cell_status.hpp"
#include "experiment/launch/elastic_cell.hpp"
#include "experiment/launch/provenance.hpp"
#include "experiment/slurm/elastic_runs.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <tuple>

namespace gradsweep::cli {

namespace {

struct ProvenanceArgs {
  std::string dir;
  bool start = false, end = false;
  // An elastic cell's run (experiment/slurm/elastic_runs.hpp): MIN/NODES, the job, its restart, its nodes.
  std::string elastic, job, nodes;
  int restart = 0;
};

// --start: start = now, end empty; an elastic cell's run also records the nodes it was given.
void record_start(const ProvenanceArgs& a) {
  const std::string now = runs::utc_now_iso8601();
  if (a.elastic.empty()) {
    experiment::write_provenance(a.dir, now, "");
    return;
  }
  experiment::slurm::ElasticRun run;
  std::tie(run.min_nodes, run.planned_nodes) = experiment::slurm::parse_elastic_range(a.elastic);
  run.job = a.job;
  run.restart = a.restart;
  run.nodes = experiment::slurm::parse_node_list(a.nodes);
  const nlohmann::json record =
      experiment::slurm::elastic_record_after(experiment::slurm::recorded_elastic(a.dir), run);
  experiment::write_provenance(a.dir, now, "", nullptr, {{"elastic", record}});
}

// --end: keeps the recorded start (and elastic record, which also goes to summary.json), end = now. A missing
// start (the --start call failed) still gets an honest end rather than no file at all.
void record_end(const ProvenanceArgs& a) {
  const nlohmann::json elastic = experiment::slurm::recorded_elastic(a.dir);
  nlohmann::json extra = nullptr;
  if (elastic.is_object()) {
    extra = {{"elastic", elastic}};
    experiment::annotate_elastic_summary(a.dir, elastic);
  }
  experiment::write_provenance(a.dir, experiment::recorded_start(a.dir), runs::utc_now_iso8601(), nullptr, extra);
}

}  // namespace

void register_provenance_command(CLI::App& app) {
  auto args = std::make_shared<ProvenanceArgs>();
  CLI::App* cmd = app.add_subcommand("cell-provenance", "Write a cell's provenance.json (used by Slurm batch scripts)");
  cmd->group("");  // hidden: an internal step of the Slurm launcher, not a user command
  cmd->add_option("cell_dir", args->dir, "The cell's directory")->required()->check(CLI::ExistingDirectory);
  auto* start_flag = cmd->add_flag("--start", args->start, "The cell starts now: start = now, end empty");
  cmd->add_flag("--end", args->end, "The cell ended now: keep the recorded start, end = now")->excludes(start_flag);
  auto* elastic = cmd->add_option("--elastic", args->elastic,
                                  "With --start, an elastic cell's run: MIN/NODES (launcher.elastic.min_nodes, "
                                  "launcher.nodes)");
  cmd->add_option("--job", args->job, "The run's Slurm job (\"1234_5\")")->needs(elastic);
  cmd->add_option("--restart", args->restart, "How often Slurm requeued the job (SLURM_RESTART_COUNT)")->needs(elastic);
  auto* nodes = cmd->add_option("--nodes", args->nodes, "The run's nodes, comma-separated host names")->needs(elastic);
  elastic->needs(start_flag)->needs(nodes);
  cmd->callback([args] {
    if (!args->start && !args->end) throw CLI::ValidationError("cell-provenance", "give --start or --end");
    if (args->start)
      record_start(*args);
    else
      record_end(*args);
  });
}

}  // namespace gradsweep::cli
