#pragma once
// Where `gradsweep check strategy` trains: a directory holding the kit's own small corpus (generated
// text, byte-level tokens), the cell every job of the check starts from, and one directory per job.
// The model and the reference strategy come from the kit's cell file (experiments/check-strategy.yaml,
// installed beside the binary), so that the host names no plugin.
#include <filesystem>
#include <string>

namespace gradsweep::conformance {

struct Workspace {
  std::filesystem::path dir;
  std::filesystem::path cell;  // the kit's cell with the data, steps and checkpoints filled in
  std::string reference;       // the kit cell's strategy: what an exact strategy must reproduce
  int steps = 0;               // checkpoints at steps / 2 and at the end
};

// The kit's cell file beside the binary: build tree <dir>/share/gradsweep/check-strategy.yaml, install
// tree <prefix>/share/gradsweep/check-strategy.yaml. Throws naming both places when neither exists.
std::filesystem::path default_kit_cell();

// Writes the corpus (a few hundred generated paragraphs, the same bytes on every machine), prepares it
// with the byte tokenizer, and writes dir/cell.yaml from `kit_cell` for `steps` steps (even, >= 2).
Workspace make_workspace(const std::filesystem::path& dir, const std::filesystem::path& kit_cell, int steps);

}  // namespace gradsweep::conformance
