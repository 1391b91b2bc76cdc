#include "cli/report_command.hpp"

#include "analysis/report.hpp"
#include "experiment/plan/report_options_reader.hpp"
#include "tracking/cell_replay.hpp"
#include "tracking/report_run.hpp"

#include <iostream>
#include <memory>

namespace gradsweep::cli {
using namespace gradsweep::experiment;
using namespace gradsweep::analysis;

namespace {
// After the cells, the sweep's report (when `gradsweep report` or `run` wrote one) goes to its own run.
void push_all(const std::filesystem::path& dir, const std::string& uri) {
  tracking::push_cells(dir, uri, std::cout);
  if (!std::filesystem::exists(dir / "report.md")) return;
  const std::string server = uri.empty() ? tracking::sweep_tracking_uri(dir) : uri;
  const std::string run = tracking::push_report(tracking::MlflowClient(server), dir);
  std::cout << "report: pushed to " << server << " (run " << run << ")\n";
}

struct ReportArgs {
  std::string dir;
  std::string baseline;
  double target_loss = 0;
  bool push = false;
  std::string tracking;
};
}  // namespace

void register_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Results table (markdown), results.csv, plots, report.md and report.html of a sweep");
  cmd->add_option("dir", args->dir, "Output directory of `gradsweep run` (with --push also one cell's directory)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--baseline", args->baseline,
                  "Cell group the others are compared with: an axis value ('single') or several ('strategy=ring "
                  "nodes=2'); default: report.baseline of the experiment file, else the first group");
  cmd->add_option("--target-loss", args->target_loss,
                  "Validation loss for time-to-target; default: report.target_loss, else the baseline's final val loss")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--push", args->push,
                "Instead of the report: send each finished cell to MLflow as the run training would have made (a "
                "cell whose finished run is already there is skipped), then the sweep's report files to its report "
                "run (docs/results.md#mlflow)");
  cmd->add_option("--tracking", args->tracking, "MLflow server for --push; default: each cell's tracking.mlflow")
      ->needs("--push");
  cmd->callback([args, cmd] {
    // The push reads only the cells' files and writes nothing: a report is a separate, repeatable step.
    if (args->push) return push_all(args->dir, args->tracking);
    runs::ReportOptions options;
    options.baseline = args->baseline;
    if (cmd->count("--target-loss") > 0) options.target_loss = args->target_loss;
    const runs::SweepPlan plan = runs::read_plan(args->dir);
    const Report report = write_report(plan, experiment::read_report_options(plan.out_dir), options);
    std::cout << report.markdown_table << "\n" << report.comparison_markdown;
    const auto out = std::filesystem::absolute(args->dir).lexically_normal();
    std::cout << "results: " << (out / "results.csv").string() << "\nreport:  " << (out / "report.md").string() << ", "
              << (out / "report.html").string() << " (" << report.plots.size() << " plots in "
              << (out / "plots").string() << ")\n";
    if (!report.plot_problem.empty()) std::cerr << "warning: " << report.plot_problem << "\n";
    for (const auto& w : report.warnings) std::cerr << "warning: " << w << "\n";
  });
}

}  // namespace gradsweep::cli
