// libFuzzer target: any text as an experiment file through what `gradsweep plan` does before it asks the
// plugins: the file read and checked (load_experiment_file), its matrix expanded, and the first cells' trees
// built from the file read again and read as cells. As in cell_config_fuzz.cpp, only a ConfigError is an
// answer.
#include "config/cell_config.hpp"
#include "experiment/plan/experiment_file.hpp"
#include "experiment/plan/cell_tree.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

// The parser reads a file: one per fuzzing process, rewritten for each input.
std::filesystem::path input_file() {
  static const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("gradsweep-experiment-fuzz-" + std::to_string(getpid()) + ".yaml");
  return file;
}

void plan(const std::filesystem::path& file) {
  using namespace gradsweep;
  const experiment::ExperimentFile exp = experiment::load_experiment_file(file, {"train.seed=3"});
  config::Diagnostics diag(file.string());
  const experiment::SweepMatrix matrix = experiment::expand_matrix(exp.sweep, diag, 64);
  diag.throw_if_any();
  std::size_t built = 0;
  for (const experiment::MatrixPoint& point : matrix.points) {
    if (++built > 4) break;
    const experiment::CellTree tree = experiment::cell_tree(exp, matrix, point, experiment::Positions::Kept);
    try {
      config::parse_cell_tree(tree.root, file.string(), exp.base_dir);
    } catch (const config::ConfigError&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path file = input_file();
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    plan(file);
  } catch (const gradsweep::config::ConfigError&) {
  }
  return 0;
}
