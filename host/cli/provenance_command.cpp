#include "cli/provenance_command.hpp"

#include "runs/cell_status.hpp"
#include "experiment/provenance.hpp"

#include <filesystem>
#include <memory>

namespace gradsweep::cli {

void register_provenance_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto start = std::make_shared<bool>(false);
  auto end = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("cell-provenance", "Write a cell's provenance.json (used by Slurm batch scripts)");
  cmd->group("");  // hidden: an internal step of the Slurm launcher, not a user command
  cmd->add_option("cell_dir", *dir, "The cell's directory")->required()->check(CLI::ExistingDirectory);
  auto* start_flag = cmd->add_flag("--start", *start, "The cell starts now: start = now, end empty");
  cmd->add_flag("--end", *end, "The cell ended now: keep the recorded start, end = now")->excludes(start_flag);
  cmd->callback([dir, start, end] {
    if (!*start && !*end) throw CLI::ValidationError("cell-provenance", "give --start or --end");
    const std::string now = runs::utc_now_iso8601();
    if (*start) {
      experiment::write_provenance(*dir, now, "");
      return;
    }
    // A missing start (the --start call failed) still gets an honest end rather than no file at all.
    experiment::write_provenance(*dir, experiment::recorded_start(*dir), now);
  });
}

}  // namespace gradsweep::cli
