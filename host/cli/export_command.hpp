#pragma once
// `gradsweep export CELL_DIR --format hf --out DIR` (host/weights/model_export.hpp; docs/models.md, "Export").
#include <CLI/CLI.hpp>

namespace gradsweep::cli {

void register_export_command(CLI::App& app);

}  // namespace gradsweep::cli
