#include "cli/report_command.hpp"

#include "experiment/report.hpp"

#include <iostream>
#include <memory>

namespace gradsweep::cli {
using namespace gradsweep::experiment;

void register_report_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("report", "Results table (markdown), results.csv, plots and report.md of a sweep");
  cmd->add_option("dir", *dir, "Output directory of `gradsweep run`")->required()->check(CLI::ExistingDirectory);
  cmd->callback([dir] {
    const Report report = write_report(read_plan(*dir));
    std::cout << report.markdown_table << "\n";
    const auto out = std::filesystem::absolute(*dir).lexically_normal();
    std::cout << "results: " << (out / "results.csv").string() << "\nreport:  " << (out / "report.md").string()
              << " (" << report.plots.size() << " plots in " << (out / "plots").string() << ")\n";
    if (!report.plot_problem.empty()) std::cerr << "warning: " << report.plot_problem << "\n";
  });
}

}  // namespace gradsweep::cli
