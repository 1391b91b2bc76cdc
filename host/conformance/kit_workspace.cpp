#include "conformance/kit_workspace.hpp"

#include "data/prepare.hpp"

#include <boost/dll/runtime_symbol_info.hpp>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <stdexcept>

namespace gradsweep::conformance {
namespace fs = std::filesystem;
namespace {

constexpr const char* kCellName = "check-strategy.yaml";
constexpr int kParagraphs = 300;

// Sentences from a fixed vocabulary and a fixed generator (not std:: distributions, whose output may
// differ between standard libraries): about 60 KB of text with enough structure for a loss to fall.
std::string tiny_corpus() {
  static constexpr std::array<const char*, 24> kWords{"the",       "a",     "gradient", "rank",   "model",  "step",
                                                      "loss",      "falls", "every",    "shares", "with",   "its",
                                                      "neighbour", "and",   "then",     "waits",  "for",    "one",
                                                      "batch",     "of",    "tokens",   "learns", "slowly", "again"};
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;
  const auto next = [&state](std::uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>((state >> 33) % n);
  };
  std::string text;
  for (int p = 0; p < kParagraphs; ++p) {
    const std::size_t sentences = 2 + next(3);
    for (std::size_t s = 0; s < sentences; ++s) {
      const std::size_t words = 4 + next(6);
      for (std::size_t w = 0; w < words; ++w) {
        std::string word = kWords[next(kWords.size())];
        if (w == 0) word[0] = static_cast<char>(word[0] - 'a' + 'A');
        text += (w == 0 ? "" : " ") + word;
      }
      text += s + 1 == sentences ? ".\n" : ". ";
    }
    text += "\n";
  }
  return text;
}

void write_text(const fs::path& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  if (!out) throw std::runtime_error(file.string() + ": cannot write");
}

}  // namespace

fs::path default_kit_cell() {
  const fs::path exe_dir = boost::dll::program_location().parent_path().string();
  const fs::path build = exe_dir / "share" / "gradsweep" / kCellName;
  const fs::path install = exe_dir.parent_path() / "share" / "gradsweep" / kCellName;
  if (fs::exists(build)) return build;
  if (fs::exists(install)) return install;
  throw std::runtime_error("the kit's cell file is neither " + build.string() + " nor " + install.string() +
                           ": name one with --cell FILE");
}

Workspace make_workspace(const fs::path& dir, const fs::path& kit_cell, int steps) {
  if (steps < 2 || steps % 2 != 0)
    throw std::invalid_argument("--steps " + std::to_string(steps) +
                                ": must be even and at least 2 (the check "
                                "interrupts a run half-way)");
  Workspace ws{dir, dir / "cell.yaml", "", steps};
  fs::create_directories(dir / "text");
  write_text(dir / "text" / "corpus.txt", tiny_corpus());
  data::PrepareOptions prepare;
  prepare.inputs = {dir / "text"};
  prepare.out_dir = dir / "data";
  prepare.tokenizer = "byte";
  prepare.val_fraction = 0.1;
  data::prepare_corpus(prepare);

  YAML::Node cell = YAML::LoadFile(kit_cell.string());
  ws.reference = cell["strategy"]["name"].as<std::string>("");
  if (ws.reference.empty()) throw std::runtime_error(kit_cell.string() + ": names no strategy.name (the reference)");
  cell["data"]["train"] = (dir / "data" / "train.bin").string();
  cell["data"]["val"] = (dir / "data" / "val.bin").string();
  cell["train"]["steps"] = steps;
  cell["checkpoint"]["every"] = steps / 2;
  YAML::Emitter out;
  out << cell;
  write_text(ws.cell, std::string(out.c_str()) + "\n");
  return ws;
}

}  // namespace gradsweep::conformance
