#pragma once
// Elastic cells: `launcher.elastic: {min_nodes: K}` (docs/experiments.md#elastic-cells).
//
// A multi-node cell that loses a node (its rank killed, its link cut) ends as any failed job does: the
// collective deadline or mpirun names the rank. An elastic cell then goes on: the launcher runs it again on the
// nodes that are left, at least K, and `gradsweep train` resumes from the last checkpoint at the new world size
// (checkpoints reshard, docs/howto/resume-at-another-size.md). Every change of size is recorded (status.json's
// "resizes", provenance.json, summary.json's "elastic", results.csv's `resized`), and the comparison puts a
// resized cell in a group of its own: its tokens/s and losses mix two cluster sizes, so pooling it with cells
// that ran at one size would report a mean of neither.
//
// Which nodes were lost is what the failure names (the ranks mpirun saw killed, the ranks the flight recorder
// found behind) and, on an emulated cluster, what the cluster itself shows (a node whose link is down). A
// failure that names no node (a bug, a bad configuration) is not a lost node: the cell fails as before, since
// running it again on fewer nodes would only fail again.
#include "config/config_error.hpp"
#include "runs/cell_status.hpp"
#include "experiment/launch/launcher.hpp"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::experiment {

// launcher.elastic.min_nodes of a cell's tree (0 when absent): at least 1, at most the cell's nodes; problems
// go to `diag` with the key's file:line:column.
int resolve_elastic(const YAML::Node& root, int nodes, config::Diagnostics& diag);

// The ranks a failure names as the culprits: "killed: rank 3 signal 9" -> {3}; "hang: ranks 1,3 did not finish
// allreduce #12" -> {1, 3}; none for any other failure.
std::vector<int> culprit_ranks(const std::string& failure);

// The nodes of a cell of `nodes` x `ranks_per_node` that a failure lost, sorted and unique: the `unreachable`
// ones and the nodes of its culprit ranks, except a hang's culprits when some node is unreachable (then those
// on reachable nodes only stalled behind it, or answered the flight recorder late).
std::vector<int> lost_nodes(const std::string& failure, int nodes, int ranks_per_node,
                            const std::vector<int>& unreachable);

// The same cell on the nodes left after `lost`, or nullopt when it must not go on: not elastic, no node lost,
// or fewer than min_nodes left. `running` is the cell as it just ran (its nodes may already be fewer than planned).
std::optional<runs::PlannedCell> shrunk_cell(const runs::PlannedCell& running, const std::vector<int>& lost);

// The record of one change, now.
runs::CellResize make_resize(const runs::PlannedCell& from, const runs::PlannedCell& to, const std::vector<int>& lost,
                             const std::string& why);

// What an elastic cell records: {"min_nodes", "planned_nodes", "nodes" (at its end), "resized" (resize_history(),
// "" when it never changed size)}, and with `with_changes` "resizes": each change as status.json has it.
nlohmann::json elastic_record(int min_nodes, int planned_nodes, int nodes_at_end,
                              const std::vector<runs::CellResize>& resizes, bool with_changes);
inline nlohmann::json elastic_record(const runs::PlannedCell& planned, int nodes_at_end,
                                     const std::vector<runs::CellResize>& resizes, bool with_changes) {
  return elastic_record(planned.elastic_min_nodes, planned.nodes, nodes_at_end, resizes, with_changes);
}

// summary.json's "elastic": `record` (elastic_record()'s) without the changes, whose scalars become results.csv
// columns (elastic.nodes, elastic.resized). Nothing without a summary.json.
void annotate_elastic_summary(const std::filesystem::path& cell_dir, const nlohmann::json& record);

}  // namespace gradsweep::experiment
