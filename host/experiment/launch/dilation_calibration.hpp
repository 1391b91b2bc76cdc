#pragma once
// The compute dilation of an emulated cell, taken from the ranks' own compute (docs/cluster.md, "Time
// dilation"). The matrix-product probe that `dilation: auto` runs at bring-up measures a moment's load with
// a loop that is not the model; when other work comes and goes, cells of one sweep got F from 1.0 to 5.1.
// Here F_compute = the ranks' forward + backward per step during the cell / the same computation's time on
// one node alone:
//
// - the reference: before the cluster comes up, the cell's own `gradsweep train` (same model, same per-rank
//   batch, same threads per rank) runs as one node's ranks alone for a few steps, at real-time round-robin
//   priority. A real node's ranks have its cores to themselves; real-time priority gives them that here
//   whatever else runs (nice -20 would not: with autogroups, other sessions' processes keep their share).
//   Other load only ever slows a step, so the best step is kept.
// - the cell's compute: the median over the computing ranks of forward + backward per step, from
//   summary.json's step_breakdown.by_rank (each rank's mean over its measured steps).
//
// Undilated tokens/s = tokens/s x F_compute: a competing load slows the ranks' compute and the step alike,
// so their ratio, and the product, stays (measured in tests/cluster/dilation_under_load_test.cpp).
#include "experiment/launch/launcher.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace gradsweep::experiment {

struct ComputeReference {
  double seconds = 0;      // the reference: the best of `calibrations` measured ones; 0 when there is none
  double measured = 0;     // this cell's own calibration (its best step); 0 when it failed
  int calibrations = 0;    // how many calibrations of this computation on this machine `seconds` is the best of
  std::string scheduling;  // how this cell's calibration ran: "nice -20" or "normal"
  std::string problem;     // why this cell's calibration failed ("" when it did not)
};

// Runs the cell's training as one node's ranks alone in cell.dir/dilation-calibration (its output and log
// stay there), `threads_per_rank` threads each, and keeps the best step of every calibration of the same
// computation on this machine in `cache_file`: the reference is the best of them all, since no load makes a
// computation faster, and one calibration of a few steps can fall in a slow moment (other processes filling
// the shared caches slowed it by a quarter at real-time priority). Never throws: a calibration that fails or
// takes longer than `deadline_s` leaves `problem` set, and a cached reference, if any, still serves.
ComputeReference calibrate_one_node(const runs::PlannedCell& cell, int threads_per_rank,
                                    const std::filesystem::path& cache_file, double deadline_s = 300);

// $XDG_CACHE_HOME/gradsweep/dilation-references.json (or under ~/.cache), beside the peak FLOP/s cache.
std::filesystem::path default_reference_cache();

// The best (smallest) forward + backward of rank 0's steps after the first, from a metrics.jsonl; 0 if none.
double best_compute_step(const std::filesystem::path& metrics_jsonl);

// The ranks' compute per step in a cell's summary.json: median over the ranks with any compute of
// step_breakdown.by_rank forward_s + backward_s; 0 when the summary has no breakdown.
double cell_compute_per_step(const nlohmann::json& summary);

}  // namespace gradsweep::experiment
