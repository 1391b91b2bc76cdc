#include "cli/export_command.hpp"

#include "weights/model_export.hpp"

#include <iostream>
#include <memory>

namespace gradsweep::cli {

void register_export_command(CLI::App& app) {
  auto request = std::make_shared<weights::ExportRequest>();
  auto step = std::make_shared<std::int64_t>(-1);
  CLI::App* cmd =
      app.add_subcommand("export",
                         "Write a trained cell's model for another framework: --format hf gives config.json and "
                         "model.safetensors, which Hugging Face transformers loads");
  cmd->add_option("cell", request->cell_dir, "The cell's directory (gradsweep train --out, or a sweep's cells/<id>)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--format", request->format, "hf (Hugging Face transformers)")
      ->check(CLI::IsMember({"hf"}))
      ->capture_default_str();
  cmd->add_option("--out", request->out, "The directory to write; replaced whole if it exists")->required();
  cmd->add_option("--step", *step, "The checkpoint's step (default: the newest)");
  cmd->callback([request, step] {
    if (*step >= 0) request->step = *step;
    const weights::ExportResult r = weights::export_cell(*request);
    std::cout << "exported " << r.model << " at step " << r.step << ": " << r.tensors << " tensors, " << r.bytes
              << " bytes -> " << request->out.string() << "\n";
  });
}

}  // namespace gradsweep::cli
