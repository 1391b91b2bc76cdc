#pragma once
// An elastic cell under Slurm (docs/experiments.md#elastic-cells). Its job array asks for a range of nodes,
// --nodes=K-N (batch_script.hpp): Slurm gives it all N when they are free, and a task that Slurm requeues
// after one of its nodes failed starts again on the nodes that are left, if at least K are; `gradsweep train`
// then resumes the checkpoint at the new world size. Each run says at its start, on the compute node, which
// nodes it was given (`gradsweep cell-provenance DIR --start --elastic K/N --job J --nodes a,b,c`). A run on
// another number of nodes than the run before it (the first run: than planned) is a change of size, kept in
// provenance.json's "elastic" as the local launcher keeps it, so that status.json (the follower copies the
// changes there), summary.json and results.csv mark the cell as resized.
#include "runs/cell_status.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace gradsweep::experiment::slurm {

// One run of an elastic cell's array task, as its batch script sees it.
struct ElasticRun {
  int min_nodes = 0, planned_nodes = 0;  // launcher.elastic.min_nodes, launcher.nodes
  std::string job;                       // "1234_5"
  int restart = 0;                       // SLURM_RESTART_COUNT: how often Slurm requeued it
  std::vector<std::string> nodes;        // the host names Slurm gave this run
};

// "K/N" -> {K, N}, with 1 <= K <= N; throws std::invalid_argument naming the text otherwise.
std::pair<int, int> parse_elastic_range(const std::string& text);

// "a,b,c" -> {a, b, c}; throws std::invalid_argument for an empty list or an empty name.
std::vector<std::string> parse_node_list(const std::string& text);

// provenance.json's "elastic" once `run` has started: `previous` (the record so far, null before the first run)
// with this run's nodes ("node_list", "nodes") and, when their count differs from the last run's (the planned
// count before the first run), a change of size appended to "resizes": the nodes of the last run that this one
// did not get are its lost nodes, by their index in the last run's list.
nlohmann::json elastic_record_after(const nlohmann::json& previous, const ElasticRun& run);

// The "elastic" of the cell's provenance.json; null when there is none (not elastic, or not started).
nlohmann::json recorded_elastic(const std::filesystem::path& cell_dir);

// Its changes of size, oldest first.
std::vector<runs::CellResize> recorded_resizes(const std::filesystem::path& cell_dir);

}  // namespace gradsweep::experiment::slurm
