#pragma once
// What the projection reads from a sweep's cells (summary.json, provenance.json, status.json), and what it
// derives per configuration ("line": a cell's axes without nodes, ranks_per_node and seed):
//
// - its compute on one rank: the step breakdown of the line's one-rank cell, else of the one-rank cells of
//   the same model, batch and precision (their median; e.g. `ring` measured against `single`);
// - its traffic: the busiest rank's bytes per step (max over ranks of bytes sent and received) fitted over
//   the line's cells on 2+ ranks as bytes(p) = a (p-1)/p + b (p-1) with a, b >= 0 (a ring's shape, a
//   server's shape; with one rank count measured, a alone), its calls per step as c + d (p-1), its overlap
//   (mean of comm.overlap) and its ranks that only serve (ranks with no compute).
//
// The host knows no strategy: every figure comes from what the cells measured.
#include "runs/plan_file.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gradsweep::analysis {

// Where a cell's ranks ran: on one machine (local launcher: shared memory, shared cores), on an emulated
// cluster (one machine's cores, a shaped link between its nodes), or on separate machines (Slurm).
enum class Placement { OneMachine, Emulated, Cluster };

struct MeasuredCell {
  std::size_t index = 0;  // in the plan
  std::string line;       // the line's key: its axes as "k=v k=v"
  int nodes = 1, ranks_per_node = 1, ranks = 1, threads_per_rank = 0, cpus = 0;
  Placement placement = Placement::OneMachine;
  bool ok = false;  // finished ok with a step breakdown, for the configuration planned now
  std::string model, precision;
  double tokens_per_step = 0, tokens_per_s = 0;
  double compute_s = 0, backward_s = 0, update_s = 0, fixed_s = 0;  // means over the ranks that compute
  double busiest_bytes = 0, calls = 0, overlap = 0;
  int computing_ranks = 1;            // plan.json's (the strategy's declaration); measured for older plans
  bool restricts_vocabulary = false;  // its strategy trained a softmax over part of the vocabulary
};

struct LineProfile {
  std::string line, label;  // key; short name for tables and legends (series_labels.hpp)
  int ranks_per_node = 1;
  // compute on one rank (missing when compute_source is empty)
  double compute_1_s = 0, backward_1_s = 0, update_1_s = 0, fixed_s = 0, tokens_per_step = 0;
  std::string compute_source;
  // traffic (missing when traffic_cells is 0)
  double bytes_ring = 0, bytes_star = 0, calls_base = 0, calls_per_rank = 0, overlap = 0;
  int servers = 0, traffic_cells = 0;  // servers: ranks that only serve, from plan.json's computing ranks
  std::vector<int> traffic_ranks;      // the rank counts the traffic was measured at
  double bytes(int ranks) const;
  double calls(int ranks) const;
};

struct SweepMeasurements {
  std::vector<MeasuredCell> cells;  // parallel to the plan's cells
  std::vector<LineProfile> lines;
  int cpus = 0;  // of the machine the one-rank cells ran on (0: unknown)
};

// `pooled`: every line's compute is the median over the one-rank cells of its model, batch and precision
// (its own included), for sweeps whose strategies do the same forward and backward on one rank: one cell
// measured under a burst of load then moves the others less.
SweepMeasurements read_measurements(const runs::SweepPlan& plan, bool pooled = false);

// Least squares of y = a f(x) + b g(x) with a, b >= 0 (the better of the clipped one-term fits when the
// free fit has a negative coefficient). Exposed for the tests.
std::pair<double, double> nonnegative_fit(const std::vector<double>& f, const std::vector<double>& g,
                                          const std::vector<double>& y);

}  // namespace gradsweep::analysis
