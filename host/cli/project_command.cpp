#include "cli/project_command.hpp"

#include "experiment/plan/sweep_setup.hpp"
#include "analysis/projection.hpp"
#include "util/atomic_file.hpp"

#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>

namespace gradsweep::cli {
namespace fs = std::filesystem;
using namespace gradsweep::analysis;

namespace {
struct ProjectArgs {
  std::string experiment, out, link_fit, algorithm = "ring", compute;
  std::vector<std::string> overrides, bench, links;
  std::vector<int> nodes;
  int cores = 0;
};

// "intra=VALUE" -> (intra, VALUE); `option` names the flag in the message.
std::pair<std::string, std::string> link_class(const std::string& text, const char* option, const char* value) {
  const auto eq = text.find('=');
  const std::string name = text.substr(0, eq);
  if (eq == std::string::npos || (name != "intra" && name != "inter"))
    throw std::invalid_argument(std::string(option) + " '" + text + "': expected intra=" + value +
                                " or inter=" + value);
  return {name, text.substr(eq + 1)};
}

ProjectionSetup make_setup(const ProjectArgs& args, const fs::path& out_dir) {
  const fs::path stored = args.link_fit.empty() ? out_dir / kLinkFitFile : fs::path(args.link_fit);
  if (!args.link_fit.empty() && !fs::exists(stored))
    throw std::invalid_argument("--link-fit " + args.link_fit + ": no such file");
  ProjectionSetup setup = read_setup(stored).value_or(ProjectionSetup{});
  std::map<std::string, std::vector<LinkPoint>> points;
  std::map<std::string, std::string> sources;
  for (const auto& b : args.bench) {
    const auto [name, file] = link_class(b, "--bench", "FILE");
    for (const auto& p : read_bench_points(file, args.algorithm)) points[name].push_back(p);
    sources[name] += (sources[name].empty() ? "fit of " : ", ") + fs::absolute(file).lexically_normal().string();
  }
  for (auto& [name, ps] : points) {
    LinkModel fit = fit_link(ps);
    fit.source = sources[name] + " (" + args.algorithm + " allreduce)";
    (name == "intra" ? setup.intra : setup.inter) = fit;
  }
  for (const auto& l : args.links) {
    const auto [name, rate] = link_class(l, "--links", "RATE[@LATENCY]");
    (name == "intra" ? setup.intra : setup.inter) = parse_link_text(rate);
  }
  if (!args.nodes.empty()) setup.nodes = args.nodes;
  if (args.cores > 0) setup.cores_per_node = args.cores;
  if (!args.compute.empty()) setup.pooled_compute = args.compute == "pooled";
  return setup;
}

void print_link(const char* name, const LinkModel& l) {
  if (!l.valid()) return;
  std::printf("%s-node link: alpha %.3g us, beta %.4g GB/s (%s)", name, l.alpha_s * 1e6, l.beta_bytes_per_s / 1e9,
              l.source.c_str());
  if (!l.points.empty())
    std::printf("; rms residual %.3g ms over %zu points", l.rms_residual_s() * 1e3, l.points.size());
  std::printf("\n");
}
}  // namespace

void register_project_command(CLI::App& app) {
  auto args = std::make_shared<ProjectArgs>();
  CLI::App* cmd =
      app.add_subcommand("project",
                         "Predict every cell's tokens/s and step breakdown, and the sweep at node counts not run "
                         "(docs/projection.md)");
  cmd->add_option("experiment", args->experiment, "Experiment file (YAML), or the output directory of its run")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("--out,-o", args->out, "Output directory of the sweep (default: runs/<experiment name>)");
  cmd->add_option("--set", args->overrides, "Override a key of the experiment file, as given to `gradsweep run`");
  std::string default_nodes;  // ProjectionSetup's own, as the help shows it
  for (const int n : ProjectionSetup{}.nodes) default_nodes += (default_nodes.empty() ? "" : ",") + std::to_string(n);
  cmd->add_option("--nodes", args->nodes, "Node counts to project to")
      ->default_str(default_nodes)
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--bench", args->bench,
                  "intra=FILE or inter=FILE: a `gradsweep bench comm --json` output to fit that link's alpha-beta "
                  "model to (repeatable; files of one link are fitted together)");
  cmd->add_option("--links", args->links,
                  "intra=RATE[@LATENCY] or inter=RATE[@LATENCY], e.g. inter=10Gbit@20us: a "
                  "link given, over any fit")
      ->delimiter(',');
  cmd->add_option("--link-fit", args->link_fit, "Read the links from this file (default: DIR/link_fit.json)");
  cmd->add_option("--algorithm", args->algorithm, "The allreduce algorithm of the bench files to fit")
      ->check(CLI::IsMember({"ring", "native", "hierarchical"}))
      ->capture_default_str();
  cmd->add_option("--compute", args->compute,
                  "own: each configuration's compute from its own one-rank cell (default); "
                  "pooled: the median over the one-rank cells of the same model, batch and precision")
      ->check(CLI::IsMember({"own", "pooled"}));
  cmd->add_option("--cores", args->cores,
                  "Cores per node of the projected configurations (default: the machine's "
                  "the one-rank cells ran on)")
      ->check(CLI::PositiveNumber);
  cmd->callback([args] {
    runs::SweepPlan plan;
    if (fs::is_directory(args->experiment)) {
      if (!fs::exists(fs::path(args->experiment) / "plan.json"))
        throw std::invalid_argument(args->experiment +
                                    " holds no sweep (no plan.json): give the experiment file, or "
                                    "run it first: `gradsweep run EXP.yaml --out " +
                                    args->experiment + "`");
      plan = runs::read_plan(args->experiment);
    } else {
      plan = experiment::load_sweep(args->experiment, args->out, args->overrides, experiment::kDefaultMaxCells,
                                    experiment::CellFiles::Skip)
                 .plan;
    }
    const ProjectionSetup setup = make_setup(*args, plan.out_dir);
    // Stored for `gradsweep report` when something was given; a projection without links writes none.
    if (!args->bench.empty() || !args->links.empty() || !args->nodes.empty() || args->cores > 0 ||
        !args->link_fit.empty() || !args->compute.empty()) {
      fs::create_directories(plan.out_dir);
      util::write_file_atomically(plan.out_dir / kLinkFitFile, setup_to_json(setup).dump(2) + "\n");
    }
    // The sweep as the commands in messages name it.
    const std::string sweep =
        fs::is_directory(args->experiment)
            ? (fs::path(args->experiment) / "experiment.yaml").string() + " --out " + args->experiment
            : args->experiment + (args->out.empty() ? "" : " --out " + args->out);
    const Projection p = project(plan, setup, sweep);
    util::write_file_atomically(plan.out_dir / "projection.json", to_json(p, plan).dump(2) + "\n");
    print_link("intra", setup.intra);
    print_link("inter", setup.inter);
    std::cout << "\n" << markdown(p, plan);
    // The configurations at the node counts asked: tokens/s per line.
    std::cout << "\nProjected tokens/s (" << (setup.inter.valid() ? "" : "no inter-node link: ")
              << "one node per machine):\n";
    for (std::size_t l = 0; l < p.measurements.lines.size(); ++l) {
      std::cout << "  " << p.measurements.lines[l].label << ":";
      for (const auto& point : p.curves[l]) std::printf(" %d:%.0f", point.nodes, point.prediction.tokens_per_s);
      std::cout << "\n";
    }
    const fs::path out = fs::absolute(plan.out_dir).lexically_normal();
    std::cout << "\nlinks: " << (out / kLinkFitFile).string() << "\nprojection: " << (out / "projection.json").string()
              << "\n";
    if (!p.missing.empty()) {
      std::string what = "the projection is missing measurements:";
      for (const auto& m : p.missing) what += "\n  - " + m;
      throw std::runtime_error(what);
    }
  });
}

}  // namespace gradsweep::cli
