#include "cli/trace_command.hpp"

#include "train/trace_merge.hpp"

#include <filesystem>
#include <iostream>
#include <memory>

namespace gradsweep::cli {
namespace fs = std::filesystem;

void register_trace_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("trace", "Where a cell's timeline trace is, and its steps rank by rank");
  cmd->add_option("dir", *dir, "A cell directory (gradsweep train --out, or a sweep's cells/<id>), or a sweep's")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->callback([dir] {
    const fs::path root(*dir);
    if (fs::is_directory(root / "trace")) {
      // Merged afresh: after a failure, rank 0 may have ended before the others wrote their last steps.
      std::cout << train::summarize(train::merge_trace(root));
      return;
    }
    // A sweep's output directory: one line per cell that has a trace.
    int found = 0;
    if (fs::is_directory(root / "cells"))
      for (const auto& cell : fs::directory_iterator(root / "cells"))
        if (fs::is_directory(cell.path() / "trace")) {
          const train::MergedTrace merged = train::merge_trace(cell.path());
          std::cout << merged.file.string() << "  (" << merged.ranks.size() << " ranks, " << merged.steps_traced
                    << " steps)\n";
          ++found;
        }
    if (found == 0)
      throw std::runtime_error("no trace in " + root.string() +
                               ": expected DIR/trace/ (written by gradsweep train unless metrics.trace is off) or "
                               "DIR/cells/<id>/trace/");
  });
}

}  // namespace gradsweep::cli
