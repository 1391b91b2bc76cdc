#pragma once
// A cell with launcher.name: emulated (emulated_cell.hpp) runs on an emulated cluster of its own
// (docs/cluster.md): the local launcher (launcher_local.hpp) brings one up for the cell, runs the cell's
// mpirun on it, and brings it down when the job has ended, whichever way it ended.
//
// One cluster per cell rather than one per sweep: cells of one shape are rarely adjacent (repeats are
// interleaved, run_order.hpp), bringing a cluster up and down takes seconds (4 s each for 2 nodes at load
// 13 on 2 cores) against a cell's minutes, and a cluster that lives exactly as long as its cell is the one
// that is certainly torn down (and, with dilation: auto, measured under the load of the moment).
//
// gradsweep itself never touches the network: gradsweep-cluster (cluster_tool.hpp) brings the cluster up, reads
// its links and brings it down, each a child process whose errors become this launcher's. The cluster still
// belongs to this process (cluster_owner.hpp): it holds an OwnerLockFile locked from before the cluster is
// complete until it is down, and passes it to `gradsweep-cluster up --owner-lock`. If the launcher is
// SIGKILLed, the kernel sends mpirun SIGTERM and drops the lock, and the next `gradsweep run` or `cluster up`
// removes what is left.
//
// The cluster's shape (nodes, ranks per node, link rate, dilation, its name) goes into the cell's
// provenance.json and summary.json as "cluster": {...}, and from summary.json into results.csv
// (cluster.nodes, cluster.link_bandwidth, cluster.dilation, ...). So does the cell's compute dilation: the
// ranks' forward + backward per step against the same computation on one node alone, timed before the
// cluster comes up (dilation_calibration.hpp), and undilated tokens/s = tokens/s x that F. The links are
// shaped with the F known at bring-up (given, or the probe's): the compute F exists only after the cell.
#include "experiment/launch/dilation_calibration.hpp"
#include "experiment/launch/launcher.hpp"

#include "cluster/cluster_owner.hpp"
#include "cluster/cluster_spec.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace gradsweep::experiment {

class CellCluster {
 public:
  // Times the cell's computation on one node's ranks alone (the compute dilation's reference), then brings
  // up the cell's cluster, measuring the links' dilation first when it is auto. Throws
  // std::runtime_error saying what failed (gradsweep-cluster's own message); nothing of the cluster is left then.
  explicit CellCluster(const runs::PlannedCell& cell);
  ~CellCluster();  // tear_down(), reporting problems on stderr
  CellCluster(const CellCluster&) = delete;
  CellCluster& operator=(const CellCluster&) = delete;

  const cluster::ClusterSpec& spec() const { return spec_; }
  // The cell's mpirun on the cluster: `local` (launcher_local.hpp's command) with the cluster's
  // hostfile, rsh agent and interfaces, and GRADSWEEP_CLUSTER* for the ranks.
  std::vector<std::string> command(const std::vector<std::string>& local) const;
  // {"name", "nodes", "ranks_per_node", "link_bandwidth", "link_bits_per_second", "dilation",
  //  "dilation_source", "shaped_bits_per_second", "dilation_probe", "compute_reference_s",
  //  "compute_reference_measured_s", "compute_reference_calibrations", "calibration_scheduling"}, and once
  //  annotate_summary has read the cell's figures "compute_s", "dilation_compute", "undilated_tokens_per_sec" (or
  //  "calibration_problem") and the links' counters "link_bytes" (per node {node, from_node, to_node}) and
  //  "link_bytes_per_node" (their mean, both ways): what provenance.json and summary.json record. `dilation` is the
  //  links' F; dilation_compute the ranks' (dilation_calibration.hpp).
  nlohmann::json record() const;
  // Reads the cell's summary.json (when it wrote one): the ranks' compute per step against the one-node
  // reference gives dilation_compute and undilated tokens/s; adds record() to it as "cluster".
  void annotate_summary(const std::filesystem::path& cell_dir);
  // Brings the cluster down (kills what still runs in it first); returns what would not go ("" if all did).
  std::string tear_down();
  // The nodes whose link carries nothing now (cluster/link_state.hpp), sorted; empty when the question fails.
  std::vector<int> nodes_with_link_down() const;

 private:
  // Each node's link counters, both ways (cluster/link_state.hpp's LinkBytes, as gradsweep-cluster reports them).
  struct LinkBytes {
    std::uint64_t from_node = 0, to_node = 0;
  };
  std::vector<LinkBytes> link_bytes() const;
  // `gradsweep-cluster up` for spec_, owned by owner_; sets spec_ (name, subnet) and mpirun_arguments_.
  void bring_up();

  cluster::ClusterSpec spec_;
  std::vector<std::string> mpirun_arguments_;  // what puts a job on the cluster, as gradsweep-cluster up said
  double probe_ = 0;                           // the matrix-product probe's F, when `dilation: auto` ran it
  ComputeReference reference_;                 // the one-node calibration, run before bring-up
  std::vector<LinkBytes> links_at_start_;      // each node's link counters once the cluster was up
  // Adds each link's bytes since bring-up to measured_ (annotate_summary, before the cluster goes down).
  void record_link_bytes();

  nlohmann::json measured_;  // what annotate_summary found: compute_s, dilation_compute, undilated tokens/s, link bytes
  std::unique_ptr<cluster::OwnerLockFile> owner_;
  bool up_ = false;
};

// command.txt of an emulated cell in a dry run, when no cluster is made: the local command and a note.
std::string emulated_dry_run_line(const runs::PlannedCell& cell, const std::vector<std::string>& local);

}  // namespace gradsweep::experiment
