#include "runs/plan_file.hpp"

#include "util/atomic_file.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gradsweep::runs {
namespace fs = std::filesystem;

void write_plan(const SweepPlan& plan, const std::string& experiment_text) {
  if (plan.cell_yaml.size() != plan.cells.size())
    throw std::logic_error("write_plan: the plan was made without its cells' YAML (CellFiles::Skip)");
  nlohmann::json cells = nlohmann::json::array();
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    const PlannedCell& c = plan.cells[i];
    const fs::path yaml = c.config_file;
    std::ifstream existing(yaml);
    std::stringstream old;
    old << existing.rdbuf();
    if (!existing || old.str() != plan.cell_yaml[i]) util::write_file_atomically(yaml, plan.cell_yaml[i]);
    nlohmann::json axes = nlohmann::json::array();
    for (const auto& [k, v] : c.axes) axes.push_back({k, v});
    cells.push_back({{"id", c.id},
                     {"config_hash", c.config_hash},
                     {"axes", axes},
                     {"nodes", c.nodes},
                     {"ranks_per_node", c.ranks_per_node},
                     {"computing_ranks", c.computing_ranks},
                     {"threads_per_rank", c.threads_per_rank},
                     {"gpus_per_node", c.gpus_per_node},
                     {"time_limit", c.time_limit},
                     {"steps", c.steps},
                     {"repeat", c.repeat},
                     {"rank_command", c.rank_command}});
    if (c.emulated.enabled)
      cells.back()["emulated"] = {{"link_bits_per_second", c.emulated.link_bits_per_second},
                                  {"dilation", c.emulated.dilation}};
  }
  const nlohmann::json j{{"name", plan.name}, {"axes", plan.axes}, {"cells", cells}};
  util::write_file_atomically(plan.out_dir / "plan.json", j.dump(2) + "\n");
  util::write_file_atomically(plan.out_dir / "experiment.yaml", experiment_text);
}

SweepPlan read_plan(const fs::path& out_dir) {
  const fs::path file = out_dir / "plan.json";
  std::ifstream in(file);
  if (!in)
    throw std::runtime_error(file.string() + ": not found; is " + out_dir.string() + " the output of `gradsweep run`?");
  const nlohmann::json j = nlohmann::json::parse(in);
  SweepPlan plan;
  plan.name = j.at("name");
  plan.out_dir = fs::absolute(out_dir).lexically_normal();
  plan.axes = j.at("axes").get<std::vector<std::string>>();
  for (const auto& c : j.at("cells")) {
    PlannedCell cell;
    cell.id = c.at("id");
    cell.config_hash = c.at("config_hash");
    cell.dir = plan.out_dir / "cells" / cell.id;
    cell.config_file = cell.dir / "cell.yaml";
    for (const auto& a : c.at("axes")) cell.axes.emplace_back(a.at(0), a.at(1));
    cell.nodes = c.value("nodes", 1);
    cell.ranks_per_node = c.value("ranks_per_node", 1);
    cell.computing_ranks = c.value("computing_ranks", 0);
    cell.threads_per_rank = c.value("threads_per_rank", 0);
    cell.gpus_per_node = c.value("gpus_per_node", 0);
    cell.time_limit = c.value("time_limit", "");
    cell.steps = c.value("steps", 0);
    cell.repeat = c.value("repeat", 0);
    cell.rank_command = c.value("rank_command", std::vector<std::string>{});
    if (c.contains("emulated"))
      cell.emulated = {true, c["emulated"].value("link_bits_per_second", std::uint64_t{0}),
                       c["emulated"].value("dilation", 1.0)};
    plan.cells.push_back(std::move(cell));
  }
  return plan;
}

}  // namespace gradsweep::runs
