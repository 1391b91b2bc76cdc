#include "experiment/launch/cell_launcher.hpp"

#include "experiment/launch/cell_locations.hpp"
#include "experiment/launch/elastic_cell.hpp"
#include "experiment/launch/emulated_cell.hpp"
#include "experiment/launch/launcher_options.hpp"

#include "config/cell_config.hpp"
#include "config/option_schema.hpp"

#include <algorithm>

namespace gradsweep::experiment {
namespace {

// A list of strings (or one string) under `key` of a launcher.slurm section, into `out`.
void read_lines(const YAML::Node& slurm_node, const char* key, const char* what, std::vector<std::string>& out,
                config::Diagnostics& diag) {
  if (!slurm_node || !slurm_node.IsMap() || !slurm_node[key]) return;
  const YAML::Node e = slurm_node[key];
  if (e.IsSequence() && std::all_of(e.begin(), e.end(), [](const YAML::Node& n) { return n.IsScalar(); }))
    for (const auto& line : e) out.push_back(line.Scalar());
  else if (e.IsScalar())
    out.push_back(e.Scalar());
  else
    diag.error(e, std::string("launcher.slurm.") + key, std::string("expected a list of ") + what);
}

}  // namespace

LauncherSettings resolve_launcher(const YAML::Node& root, config::Diagnostics& diag) {
  const YAML::Node launcher_node = root["launcher"];
  LauncherSettings s;
  s.launcher =
      config::resolve_options(launcher_node, "launcher", launcher_options(), {"slurm", "link", "elastic"}, diag);
  if (launcher_node && !launcher_node.IsNull() && !launcher_node.IsMap()) {  // refused above: go on with defaults
    config::Diagnostics refused(diag.file());
    s.launcher = config::resolve_options(YAML::Node(), "launcher", launcher_options(), {}, refused);
  }
  s.emulated = resolve_emulated_launcher(root, s.launcher.text("name"), s.launcher.text("dilation"),
                                         static_cast<int>(s.launcher.integer("nodes")), diag);
  s.elastic_min_nodes = resolve_elastic(root, static_cast<int>(s.launcher.integer("nodes")), diag);
  if (s.launcher.has("threads"))
    config::check_threads_fit_machine(s.launcher.integer("threads"), node_for_key(root, "launcher.threads", false),
                                      "launcher.threads", diag);
  const YAML::Node slurm_node = launcher_node && launcher_node.IsMap() ? launcher_node["slurm"] : YAML::Node();
  s.slurm = config::resolve_options(slurm_node, "launcher.slurm", slurm_options(), {"extra", "setup"}, diag);
  read_lines(slurm_node, "extra", "sbatch option lines", s.extra, diag);
  read_lines(slurm_node, "setup", "shell lines", s.setup, diag);
  return s;
}

}  // namespace gradsweep::experiment
