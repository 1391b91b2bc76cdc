#include "experiment/plan/sweep_plan.hpp"

#include "experiment/plan/cell_id.hpp"
#include "experiment/launch/cell_launcher.hpp"
#include "experiment/launch/cell_locations.hpp"
#include "experiment/plan/cell_tree.hpp"
#include "experiment/plan/data_facts.hpp"
#include "experiment/launch/emulated_cell.hpp"
#include "experiment/plan/model_facts.hpp"
#include "experiment/plan/sweep_plan_check.hpp"

#include "config/cell_config.hpp"
#include "config/key_path.hpp"
#include "config/option_schema.hpp"
#include "data/batch_loader.hpp"
#include "plugins/plugin_declarations.hpp"
#include "plugins/plugin_options.hpp"
#include "util/atomic_file.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace gradsweep::experiment {
namespace fs = std::filesystem;
using config::ConfigError;
using config::Diagnostics;

namespace {

// A strategy or model axis whose cells give the plugin options ({name: sampled, transport: ps}) is
// labelled with them, "sampled(transport=ps)": otherwise two cells of one plugin would read alike in
// the plan, results.csv and the plots. Options that are axes of their own are shown there instead.
std::string plugin_options_label(const std::string& axis, const YAML::Node& cell_root, const std::vector<Axis>& axes) {
  if (axis != "strategy" && axis != "model") return "";
  const YAML::Node section = cell_root[axis];
  if (!section || !section.IsMap()) return "";
  std::string options;
  for (const auto& item : section) {
    const std::string key = item.first.as<std::string>();
    const bool own_axis =
        std::any_of(axes.begin(), axes.end(), [&](const Axis& a) { return a.path == axis + "." + key; });
    if (key != "name" && !own_axis) options += (options.empty() ? "" : ",") + key + "=" + value_text(item.second);
  }
  return options.empty() ? "" : "(" + options + ")";
}

std::string available(const plugins::PluginRegistry& registry, sdk::PluginKind kind) {
  std::string names;
  for (const auto& p : registry.plugins())
    if (p.kind == kind) names += (names.empty() ? "" : ", ") + p.name;
  return names.empty() ? "none" : names;
}

std::string absolute_text(const fs::path& p) { return fs::absolute(p).lexically_normal().string(); }

struct BuiltCell {
  runs::PlannedCell cell;
  std::string yaml;
};

// Moves a Diagnostics' errors, if any, to the end of `problems`; returns whether there were any.
bool take_problems(Diagnostics& diag, std::vector<std::string>& problems) {
  try {
    diag.throw_if_any();
  } catch (const ConfigError& e) {
    problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    return true;
  }
  return false;
}

// The model's and the strategy's options, validated against the nodes of the experiment file itself.
std::map<std::string, sdk::Options> resolve_plugin_sections(const YAML::Node& cell,
                                                            const plugins::PluginRegistry& registry,
                                                            Diagnostics& diag) {
  std::map<std::string, sdk::Options> plugin_options;
  for (const auto& [section, kind] : {std::pair{std::string("model"), sdk::PluginKind::Model},
                                      {std::string("strategy"), sdk::PluginKind::Strategy}}) {
    const YAML::Node name_node = config::find_key_path(cell, section + ".name");
    const bool default_strategy = section == "strategy" && !cell["strategy"];  // as in train
    if (!default_strategy && (!name_node || !name_node.IsScalar())) continue;  // parse_cell_config says so
    const std::string name = default_strategy ? config::kDefaultStrategy : name_node.Scalar();
    const plugins::PluginRecord* record = registry.try_find(kind, name);
    if (record == nullptr) {
      diag.error(name_node, section + ".name",
                 "unknown " + section + " plugin '" + name + "'; available: " + available(registry, kind));
      continue;
    }
    plugin_options[section] = plugins::resolve_plugin_options(*record, cell[section], section, diag);
  }
  return plugin_options;
}

// The host's sections, through the same loader as `gradsweep train`; its problems, placed in the
// experiment file, go to `problems`.
std::optional<config::CellConfig> load_cell_config(const YAML::Node& cell, const ExperimentFile& exp,
                                                   Positions positions, std::vector<std::string>& problems) {
  const std::string file = exp.file.string();
  try {
    // Without positions the tree is read as it is; with them, as emitted text, whose messages relocate() places.
    if (positions == Positions::Dropped) return config::parse_cell_tree(cell, kEmittedName, exp.base_dir);
    YAML::Emitter emitted;
    emitted << cell;
    return config::parse_cell_config(emitted.c_str(), kEmittedName, exp.base_dir);
  } catch (const ConfigError& e) {
    for (const auto& p : e.problems()) problems.push_back(relocate(p, cell, file));
  } catch (const std::exception& e) {
    problems.push_back(file + ": " + e.what());
  }
  return std::nullopt;
}

// model.init_from: the model as configured takes the directory's weights, or the key is refused where
// it was written.
void check_init_from(const CellTree& tree, const config::CellConfig& config, const plugins::PluginRecord& model,
                     std::map<std::string, sdk::Options>& plugin_options, ModelFacts& model_facts, Diagnostics& diag) {
  try {
    model_facts.check_weights(model, plugin_options["model"], config.init_from);
  } catch (const std::exception& e) {
    diag.error(node_for_key(tree.cell, "model.init_from", false), "model.init_from", e.what());
  }
}

// What the plugins answer about the cell, asked only when their options are valid: the model as its
// plugin resolves it (a preset's block size, not the keys as read), and the strategy's verdict on the
// cell (refused by what it declares; how many ranks the batch is split over). Returns the computing ranks.
int check_with_plugins(const CellTree& tree, const config::CellConfig& config, const LauncherSettings& launch,
                       std::map<std::string, sdk::Options>& plugin_options, const plugins::PluginRegistry& registry,
                       ModelFacts& model_facts, std::optional<sdk::ModelInfo>& model_info, Diagnostics& diag) {
  const bool options_valid = diag.empty();
  const int nodes = launch.nodes(), per_node = launch.ranks_per_node(), world = nodes * per_node;
  if (const plugins::PluginRecord* model = registry.try_find(sdk::PluginKind::Model, config.model_name);
      model != nullptr && plugin_options.count("model") && options_valid) {
    try {
      model_info = model_facts.of(*model, plugin_options["model"]);
      if (model_info->block_size > 0 && config.train.seq_len > model_info->block_size)
        diag.error(node_for_key(tree.cell, "train.seq_len", false), "train.seq_len",
                   std::to_string(config.train.seq_len) + " is longer than the model's block size " +
                       std::to_string(model_info->block_size) + " (" + config.model_name + " as configured)");
    } catch (const std::exception& e) {
      diag.error(node_for_key(tree.cell, "model.name", false), "model", e.what());
    }
    if (!config.init_from.empty() && diag.empty())
      check_init_from(tree, config, *model, plugin_options, model_facts, diag);
  }
  int computing = std::max(1, world);
  if (const plugins::PluginRecord* strategy = registry.try_find(sdk::PluginKind::Strategy, config.strategy_name);
      strategy != nullptr && plugin_options.count("strategy") && options_valid && world >= 1) {
    const plugins::PlanVerdict verdict = check_planned_strategy(
        *strategy, config, nodes, per_node, plugin_options["strategy"], model_info ? &*model_info : nullptr);
    if (!verdict.refusal.empty()) {
      const std::string key = plugins::refusal_key(verdict, nodes);
      diag.error(node_for_key(tree.root, key, false), key, verdict.refusal);
    }
    computing = std::max(1, verdict.computing_ranks);
  }
  return computing;
}

// The global batch splits over the computing ranks and their micro-batches.
void check_batch(const YAML::Node& cell, const config::CellConfig& config, int world, int computing,
                 Diagnostics& diag) {
  const auto& train = config.train;
  if (world >= 1) {
    const std::int64_t micro = data::micro_batch_size(train.micro_batch, train.batch_size, computing);
    if (train.micro_batch == 0 && train.batch_size % computing != 0)
      diag.error(node_for_key(cell, "train.batch_size", false), "train.batch_size",
                 std::to_string(train.batch_size) + " sequences do not split evenly over the " +
                     std::to_string(computing) + " computing ranks of this cell");
    else if (micro > 0 && train.batch_size % (micro * computing) != 0)
      diag.error(node_for_key(cell, "train.micro_batch", false), "train.micro_batch",
                 "batch_size " + std::to_string(train.batch_size) + " is not a multiple of micro_batch x ranks = " +
                     std::to_string(micro) + " x " + std::to_string(computing));
  }
}

// An elastic cell may go on at any node count down to min_nodes; the batch must split at each of them (only
// checked where every rank computes: a server's count does not shrink with the nodes).
void check_elastic_batch(const CellTree& tree, const config::CellConfig& config, const LauncherSettings& launch,
                         int computing, Diagnostics& diag) {
  const int per_node = launch.ranks_per_node();
  if (launch.elastic_min_nodes <= 0 || computing != launch.nodes() * per_node) return;
  for (int n = launch.elastic_min_nodes; n < launch.nodes(); ++n) {
    Diagnostics at_size(diag.file());
    check_batch(tree.cell, config, n * per_node, n * per_node, at_size);
    if (at_size.empty()) continue;
    diag.error(node_for_key(tree.root, "launcher.elastic.min_nodes", false), "launcher.elastic.min_nodes",
               "lets the cell go on with " + std::to_string(n) + " node(s) (" + std::to_string(n * per_node) +
                   " ranks), over which train.batch_size " + std::to_string(config.train.batch_size) +
                   " and its micro-batches do not split; raise min_nodes or pick a batch that splits at every size");
    return;
  }
}

// The launcher's threads per rank unless the cell sets its own.
int threads_per_rank(const LauncherSettings& launch, const config::CellConfig& config) {
  return launch.launcher.integer("threads") > 0 && config.threads == 0
             ? static_cast<int>(launch.launcher.integer("threads"))
             : static_cast<int>(config.threads);
}

// The resolved configuration: what the ranks read, and what the id is a hash of.
YAML::Node resolved_config(const config::CellConfig& config, int threads,
                           std::map<std::string, sdk::Options>& plugin_options) {
  YAML::Node resolved = config.resolved;
  // One entry stays a string, so that the cells (and ids) of files written before lists existed are unchanged.
  for (const auto& [key, entries] : {std::pair{"train", &config.train_data}, {"val", &config.val_data}}) {
    YAML::Node value;
    for (const auto& e : *entries) value.push_back(absolute_text(e));
    resolved["data"][key] = entries->size() == 1 ? YAML::Node(absolute_text(entries->front())) : value;
  }
  resolved["runtime"]["threads"] = threads;
  for (const std::string section : {"model", "strategy"}) {
    YAML::Node s = config::to_yaml(plugin_options[section]);
    s["name"] = section == "model" ? config.model_name : config.strategy_name;
    resolved[section] = s;
  }
  if (!config.plugin_paths.empty())
    for (const auto& p : config.plugin_paths) resolved["plugins"]["paths"].push_back(absolute_text(p));
  return resolved;
}

// The cell's id, directory, command and resources.
runs::PlannedCell planned_cell(const YAML::Node& resolved, const LauncherSettings& launch, int threads,
                               const config::CellConfig& config, const SweepMatrix& matrix, const MatrixPoint& point,
                               const fs::path& out_dir, const fs::path& binary) {
  nlohmann::json identity{{"cell", canonical_json(resolved)},
                          {"launcher", {{"nodes", launch.nodes()}, {"ranks_per_node", launch.ranks_per_node()}}}};
  if (launch.emulated.enabled) identity["launcher"]["emulated"] = emulated_identity(launch.emulated);
  // Repeats with one seed resolve to one configuration: the repetition tells them apart.
  if (!matrix.vary_seed && point.repeat > 0) identity["repeat"] = point.repeat;

  const sdk::Options& slurm = launch.slurm;
  runs::PlannedCell cell;
  cell.config_hash = config_hash(identity);
  cell.id = cell_id(cell.config_hash);
  cell.dir = out_dir / "cells" / cell.id;
  cell.config_file = cell.dir / "cell.yaml";
  cell.rank_command = {binary.string(), "train", cell.config_file.string(), "--out", cell.dir.string()};
  cell.nodes = launch.nodes();
  cell.ranks_per_node = launch.ranks_per_node();
  cell.elastic_min_nodes = launch.elastic_min_nodes;
  cell.cuda = config::is_cuda_device(config.device);
  cell.threads_per_rank = threads;
  cell.gpus_per_node = static_cast<int>(slurm.integer("gpus_per_node"));
  cell.time_limit = slurm.text("time");
  cell.steps = config.train.steps;
  cell.slurm = {slurm.text("partition"),
                slurm.text("account"),
                slurm.text("time"),
                slurm.text("qos"),
                slurm.text("constraint"),
                cell.gpus_per_node,
                static_cast<int>(slurm.integer("cpus_per_task")),
                launch.extra,
                static_cast<int>(slurm.integer("max_concurrent")),
                launch.setup};
  cell.emulated = launch.emulated;
  cell.repeat = point.repeat;
  return cell;
}

// Each axis's value in this cell, as the plan and the results show it: the resolved value of an axis the
// cell does not set (a default), built only when one is needed.
std::vector<std::pair<std::string, std::string>> axis_values(const CellTree& tree, const YAML::Node& resolved,
                                                             const LauncherSettings& launch, int threads,
                                                             const SweepMatrix& matrix) {
  std::vector<std::pair<std::string, std::string>> values;
  YAML::Node effective;
  bool have_effective = false;
  for (const auto& axis : matrix.axes) {
    YAML::Node value = config::find_key_path(axis.path.rfind("launcher.", 0) == 0 ? tree.root : tree.cell, axis.path);
    if (!value) {
      if (!std::exchange(have_effective, true)) {
        effective = YAML::Clone(resolved);  // a copy: assigning a Node would alias it
        effective["launcher"]["nodes"] = launch.nodes();
        effective["launcher"]["ranks_per_node"] = launch.ranks_per_node();
        effective["launcher"]["threads"] = threads;
        effective["launcher"]["name"] = launch.launcher.text("name");
        effective["launcher"]["dilation"] = launch.launcher.text("dilation");
      }
      value = config::find_key_path(effective, axis.path);
    }
    values.emplace_back(axis.name, value_text(value) + plugin_options_label(axis.name, tree.cell, matrix.axes));
  }
  return values;
}

std::string cell_yaml(const runs::PlannedCell& cell, const YAML::Node& resolved, const ExperimentFile& exp) {
  YAML::Emitter out;
  out << resolved;
  std::string header = "# cell " + cell.id + " of experiment " + exp.name + " (" + exp.file.string() + ")";
  for (const auto& [axis, value] : cell.axes) header += "\n#   " + axis + ": " + value;
  return header + "\n# generated by `gradsweep run`: edit the experiment file, not this one\n" + out.c_str() + "\n";
}

// Builds one cell; its problems are appended to `problems` (nothing is returned then).
std::optional<BuiltCell> build_cell(const ExperimentFile& exp, const SweepMatrix& matrix, const MatrixPoint& point,
                                    const plugins::PluginRegistry& registry, const fs::path& out_dir,
                                    const fs::path& binary, ModelFacts& model_facts, DataFacts& data_facts,
                                    Positions positions, CellFiles files, std::vector<std::string>& problems) {
  const CellTree tree = cell_tree(exp, matrix, point, positions);
  Diagnostics diag(exp.file.string());
  const LauncherSettings launch = resolve_launcher(tree.root, diag);
  take_problems(diag, problems);

  Diagnostics plugin_diag(exp.file.string());
  std::map<std::string, sdk::Options> plugin_options = resolve_plugin_sections(tree.cell, registry, plugin_diag);
  const std::optional<config::CellConfig> config = load_cell_config(tree.cell, exp, positions, problems);
  if (!config) {
    take_problems(plugin_diag, problems);
    return std::nullopt;
  }
  // Cells that cannot run, caught here rather than after minutes in a queue.
  std::optional<sdk::ModelInfo> model_info;
  const int computing =
      check_with_plugins(tree, *config, launch, plugin_options, registry, model_facts, model_info, plugin_diag);
  check_batch(tree.cell, *config, launch.nodes() * launch.ranks_per_node(), computing, plugin_diag);
  check_elastic_batch(tree, *config, launch, computing, plugin_diag);
  check_cell_data(
      *config, model_info ? &*model_info : nullptr, data_facts,
      [&](const std::string& key) { return node_for_key(tree.cell, key, false); }, plugin_diag);
  if (take_problems(plugin_diag, problems) || !problems.empty()) return std::nullopt;

  const int threads = threads_per_rank(launch, *config);
  const YAML::Node resolved = resolved_config(*config, threads, plugin_options);
  BuiltCell built{planned_cell(resolved, launch, threads, *config, matrix, point, out_dir, binary), ""};
  built.cell.computing_ranks = computing;
  built.cell.axes = axis_values(tree, resolved, launch, threads, matrix);
  if (files == CellFiles::Make) built.yaml = cell_yaml(built.cell, resolved, exp);
  return built;
}

}  // namespace

std::vector<fs::path> experiment_plugin_path(const ExperimentFile& experiment) {
  return plugins::PluginRegistry::search_path(experiment.plugin_paths);
}

runs::SweepPlan plan_sweep(const ExperimentFile& experiment, const fs::path& out_dir,
                           const plugins::PluginRegistry& registry, const fs::path& gradsweep_binary,
                           std::size_t max_cells, CellFiles cell_files) {
  Diagnostics diag(experiment.file.string());
  const SweepMatrix matrix = expand_matrix(experiment.sweep, diag, max_cells);
  diag.throw_if_any();

  runs::SweepPlan plan;
  plan.name = experiment.name;
  plan.out_dir = fs::absolute(out_dir).lexically_normal();
  for (const auto& axis : matrix.axes) plan.axes.push_back(axis.name);

  // A problem in the base shows up in every cell: report each distinct problem once, naming the cell
  // only when some cells have it and others do not.
  // Per problem, the first cell that has it and how many do: describing a cell parses the file again.
  std::vector<std::string> order;
  std::map<std::string, std::pair<std::string, std::size_t>> cells_with;
  std::set<std::string> ids;
  ModelFacts model_facts;
  DataFacts data_facts;
  for (const auto& point : matrix.points) {
    std::vector<std::string> problems;
    auto built = build_cell(experiment, matrix, point, registry, plan.out_dir, gradsweep_binary, model_facts,
                            data_facts, Positions::Dropped, cell_files, problems);
    ++plan.cell_builds;
    if (!built) {  // again from the file, for messages with their line and column
      problems.clear();
      built = build_cell(experiment, matrix, point, registry, plan.out_dir, gradsweep_binary, model_facts, data_facts,
                         Positions::Kept, cell_files, problems);
      ++plan.cell_builds;
    }
    for (const auto& p : problems) {
      if (!cells_with.count(p)) {
        order.push_back(p);
        cells_with[p].first = describe_point(experiment, matrix, point);
      }
      ++cells_with[p].second;
    }
    if (!built) continue;
    if (!built->yaml.empty()) ++plan.yaml_emits;
    if (!ids.insert(built->cell.id).second) {
      ++plan.duplicates;
      continue;
    }
    plan.cells.push_back(std::move(built->cell));
    if (cell_files == CellFiles::Make) plan.cell_yaml.push_back(std::move(built->yaml));
  }
  if (!order.empty() || !experiment.problems.empty()) {
    std::vector<std::string> problems = experiment.problems;
    for (const auto& p : order) {
      const auto& [first, count] = cells_with[p];
      if (count == matrix.points.size() && matrix.points.size() > 1) {
        problems.push_back(p);
      } else {
        std::string where = " (cell " + first;
        if (count > 1) where += ", and " + std::to_string(count - 1) + " more";
        problems.push_back(p + where + ")");
      }
    }
    throw ConfigError(problems);
  }
  return plan;
}

}  // namespace gradsweep::experiment
