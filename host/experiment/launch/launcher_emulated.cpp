#include "experiment/launch/launcher_emulated.hpp"

#include "experiment/launch/cluster_tool.hpp"
#include "experiment/launch/launcher_local.hpp"

#include "cluster/bandwidth.hpp"
#include "cluster/time_dilation.hpp"
#include "util/atomic_file.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace gradsweep::experiment {
namespace fs = std::filesystem;

CellCluster::CellCluster(const runs::PlannedCell& cell) {
  spec_.nodes = cell.nodes;
  spec_.ranks_per_node = cell.ranks_per_node;
  spec_.link_bits_per_second = cell.emulated.link_bits_per_second;
  spec_.dilation = cell.emulated.dilation;
  // Before the cluster, and before the probe: nothing of this cell competes with it yet.
  reference_ = calibrate_one_node(cell, local_threads_per_rank(cell), default_reference_cache());
  if (spec_.dilation == 0.0 && cell.nodes == 1) {
    // One node alone is the reference the slowdown is measured against: F = 1 by definition. Measuring
    // it anyway gave 1.22 and 2.09 on a busy machine, noise that would then scale the cell's figures.
    spec_.dilation = 1.0;
    spec_.dilation_source = "one node";
  } else if (spec_.dilation == 0.0) {
    spec_.dilation = cluster::measure_dilation(cell.nodes, cell.ranks_per_node);
    spec_.dilation_source = "measured";
    probe_ = spec_.dilation;
  }
  try {
    bring_up();
  } catch (const std::exception& e) {
    owner_.reset();
    throw std::runtime_error(std::string("emulated cluster: ") + e.what());
  }
  up_ = true;
  links_at_start_ = link_bytes();
}

void CellCluster::bring_up() {
  // Owned by this process before gradsweep-cluster makes it: a cluster of a sweep that dies is a leftover.
  owner_ = std::make_unique<cluster::OwnerLockFile>();
  char dilation[64];
  std::snprintf(dilation, sizeof dilation, "%.17g", spec_.dilation);
  const nlohmann::json reply = run_cluster_tool_json(
      {"up", "--json", "--nodes", std::to_string(spec_.nodes), "--ranks-per-node", std::to_string(spec_.ranks_per_node),
       "--link-bandwidth", std::to_string(spec_.link_bits_per_second) + "bit", "--dilation", dilation,
       "--dilation-source", spec_.dilation_source, "--owner-lock", owner_->path().string()});
  try {
    spec_ = cluster::spec_from_json(reply.at("cluster"));
    mpirun_arguments_ = reply.at("mpirun_arguments").get<std::vector<std::string>>();
  } catch (const std::exception& e) {
    // Up, but not as we can use it: it goes down again (the destructor does not run for a throwing constructor).
    std::string name = reply.contains("cluster") ? reply["cluster"].value("name", "") : "";
    if (!name.empty()) run_cluster_tool({"down", name});
    throw std::runtime_error("gradsweep-cluster up replied " + reply.dump() + ": " + e.what());
  }
}

CellCluster::~CellCluster() {
  const std::string problem = tear_down();
  if (!problem.empty()) std::cerr << "warning: " << problem << "\n";
}

std::string CellCluster::tear_down() {
  if (!up_) return "";
  up_ = false;
  std::string problem;
  try {
    run_cluster_tool({"down", spec_.name});
  } catch (const std::exception& e) {
    problem = std::string(e.what()) + " (`gradsweep cluster list --clean` retries)";
  }
  owner_.reset();  // after bring_down: until then the cluster is ours, never someone's leftover
  return problem;
}

std::vector<CellCluster::LinkBytes> CellCluster::link_bytes() const {
  // Counters that cannot be read count as none: a cell's figures lack its link bytes, and it still runs.
  std::vector<LinkBytes> bytes;
  try {
    const nlohmann::json reply = run_cluster_tool_json({"link-state", spec_.name});
    for (const nlohmann::json& b : reply.at("bytes"))
      bytes.push_back({b.at("from_node").get<std::uint64_t>(), b.at("to_node").get<std::uint64_t>()});
  } catch (const std::exception& e) {
    std::cerr << "warning: cluster " << spec_.name << ": link counters: " << e.what() << "\n";
    bytes.clear();
  }
  return bytes;
}

std::vector<int> CellCluster::nodes_with_link_down() const {
  try {
    return run_cluster_tool_json({"link-state", spec_.name}).at("down").get<std::vector<int>>();
  } catch (const std::exception& e) {
    std::cerr << "warning: cluster " << spec_.name << ": link state: " << e.what() << "\n";
    return {};
  }
}

std::vector<std::string> CellCluster::command(const std::vector<std::string>& local) const {
  // Always mpirun, one rank too: the rank then runs inside node 0 as the others do on theirs.
  std::vector<std::string> argv;
  std::size_t rank_start = 0;
  if (!local.empty() && local.front() == "mpirun") {
    argv.push_back("mpirun");
    rank_start = 1;
  } else {
    argv = {"mpirun", "--bind-to", "none", "-np", "1"};
  }
  argv.insert(argv.end(), mpirun_arguments_.begin(), mpirun_arguments_.end());
  argv.insert(argv.end(), {"-x", "GRADSWEEP_CLUSTER=" + spec_.name, "-x",
                           "GRADSWEEP_CLUSTER_DILATION=" + std::to_string(spec_.dilation)});
  argv.insert(argv.end(), local.begin() + static_cast<std::ptrdiff_t>(rank_start), local.end());
  return argv;
}

nlohmann::json CellCluster::record() const {
  nlohmann::json r{
      {"name", spec_.name},
      {"nodes", spec_.nodes},
      {"ranks_per_node", spec_.ranks_per_node},
      {"link_bandwidth", cluster::format_bandwidth(spec_.link_bits_per_second)},
      {"link_bits_per_second", spec_.link_bits_per_second},
      {"dilation", spec_.dilation},
      {"dilation_source", spec_.dilation_source},
      {"shaped_bits_per_second", spec_.shaped_bits_per_second()},
      {"dilation_probe", probe_ > 0 ? nlohmann::json(probe_) : nlohmann::json(nullptr)},
      {"compute_reference_s", reference_.seconds > 0 ? nlohmann::json(reference_.seconds) : nullptr},
      {"compute_reference_measured_s", reference_.measured > 0 ? nlohmann::json(reference_.measured) : nullptr},
      {"compute_reference_calibrations", reference_.calibrations},
      {"calibration_scheduling", reference_.scheduling}};
  if (!reference_.problem.empty()) r["calibration_problem"] = reference_.problem;
  if (measured_.is_object()) r.update(measured_);
  return r;
}

void CellCluster::annotate_summary(const fs::path& cell_dir) {
  const fs::path file = cell_dir / "summary.json";
  std::ifstream in(file);
  if (!in) return;
  nlohmann::json summary = nlohmann::json::parse(in, nullptr, false);
  if (!summary.is_object()) return;
  // F_compute = the ranks' compute per step in the cell / the same computation on one node alone; the
  // cell's throughput on the cluster asked for is then tokens/s x F_compute (docs/cluster.md).
  const double compute = cell_compute_per_step(summary);
  const double tokens_per_sec = summary.value("tokens_per_sec", 0.0);
  measured_ = {{"compute_s", compute > 0 ? nlohmann::json(compute) : nullptr},
               {"dilation_compute", nullptr},
               {"undilated_tokens_per_sec", nullptr}};
  if (compute > 0 && reference_.seconds > 0) {
    const double f = compute / reference_.seconds;
    measured_["dilation_compute"] = f;
    measured_["undilated_tokens_per_sec"] = tokens_per_sec * f;
  } else if (reference_.problem.empty()) {
    measured_["calibration_problem"] = "the cell's summary.json has no forward/backward time per rank";
  }
  record_link_bytes();
  summary["cluster"] = record();
  util::write_file_atomically(file, summary.dump(2) + "\n");
}

void CellCluster::record_link_bytes() {
  // What the job moved over each node's link: the counters now less those at bring-up (mpirun's own
  // traffic, a few kB, counts too).
  const std::vector<LinkBytes> now = link_bytes();
  if (now.size() != links_at_start_.size() || now.empty()) return;
  nlohmann::json per_node = nlohmann::json::array();
  double both_ways = 0;
  for (std::size_t n = 0; n < now.size(); ++n) {
    const std::uint64_t from = now[n].from_node - std::min(now[n].from_node, links_at_start_[n].from_node);
    const std::uint64_t to = now[n].to_node - std::min(now[n].to_node, links_at_start_[n].to_node);
    per_node.push_back({{"node", n}, {"from_node", from}, {"to_node", to}});
    both_ways += static_cast<double>(from + to);
  }
  measured_["link_bytes"] = per_node;
  measured_["link_bytes_per_node"] = both_ways / static_cast<double>(now.size());
}

std::string emulated_dry_run_line(const runs::PlannedCell& cell, const std::vector<std::string>& local) {
  const double f = cell.emulated.dilation;
  std::ostringstream note;
  note << "# on an emulated cluster of " << cell.nodes << " node(s) x " << cell.ranks_per_node << " rank(s), links "
       << cluster::format_bandwidth(cell.emulated.link_bits_per_second) << ", dilation "
       << (f == 0.0 ? std::string("auto") : std::to_string(f))
       << ": `gradsweep run` adds the cluster's mpirun arguments (`gradsweep cluster args NAME`)\n";
  return note.str() + shell_line(local) + "\n";
}

}  // namespace gradsweep::experiment
