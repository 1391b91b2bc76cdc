#include "strategies/compressed_runs.hpp"

#include <torch/serialize/input-archive.h>
#include <torch/torch.h>

#include <fstream>
#include <utility>

namespace gradsweep::test {
namespace fs = std::filesystem;

std::vector<std::vector<std::int64_t>> gpt2_tiny_shapes() {
  const std::int64_t e = 64;
  // wte: 257 ids in 384 rows (model.vocab_multiple 128), then wpe.
  std::vector<std::vector<std::int64_t>> shapes{{384, e}, {32, e}};
  for (int layer = 0; layer < 2; ++layer) {
    const std::vector<std::vector<std::int64_t>> block{{e},        {e},      // ln_1
                                                       {3 * e, e}, {3 * e},  // attn.c_attn
                                                       {e, e},     {e},      // attn.c_proj
                                                       {e},        {e},      // ln_2
                                                       {4 * e, e}, {4 * e},  // mlp.c_fc
                                                       {e, 4 * e}, {e}};     // mlp.c_proj
    shapes.insert(shapes.end(), block.begin(), block.end());
  }
  shapes.push_back({e});  // ln_f
  shapes.push_back({e});
  return shapes;
}

std::int64_t numel_of(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::uint64_t allreduce_bytes(std::int64_t elements, int ranks) {
  return 2 * static_cast<std::uint64_t>(ranks - 1) * static_cast<std::uint64_t>(4 * elements) /
         static_cast<std::uint64_t>(ranks);
}

std::uint64_t allgather_bytes(std::int64_t elements_per_rank, int ranks) {
  const auto gathered = static_cast<std::uint64_t>(4 * elements_per_rank * ranks);
  return static_cast<std::uint64_t>(ranks - 1) * gathered / static_cast<std::uint64_t>(ranks);
}

std::string parameters_differ(const fs::path& out, int ranks, int step) {
  auto load = [&](int rank) {
    torch::serialize::InputArchive archive;
    archive.load_from(
        (out / "checkpoint" / ("rank-" + std::to_string(rank)) / ("step-" + std::to_string(step)) / "model.pt")
            .string());
    return archive;
  };
  torch::serialize::InputArchive reference = load(0);
  std::size_t compared = 0;
  for (int rank = 1; rank < ranks; ++rank) {
    torch::serialize::InputArchive other = load(rank);
    for (const std::string& key : reference.keys()) {
      if (key.rfind("param/", 0) != 0) continue;
      torch::Tensor a, b;
      reference.read(key, a);
      other.read(key, b);
      if (!torch::equal(a, b)) return key + " differs between rank 0 and rank " + std::to_string(rank);
      ++compared;
    }
  }
  return compared == 0 ? "no parameters found in " + out.string() : "";
}

TrainingRun train_into(const fs::path& dir, const std::string& out, int ranks, const std::string& strategy,
                       const std::vector<std::string>& overrides, int steps, const std::string& extra) {
  const fs::path corpus = byte_corpus();
  const fs::path cell = dir / "cell.yaml";
  write_text(cell,
             "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
             "strategy: {name: " +
                 strategy + "}\n" + "data: {train: " + (corpus / "train.bin").string() +
                 ", val: " + (corpus / "val.bin").string() + "}\n" + "train: {steps: " + std::to_string(steps) +
                 ", batch_size: 8, seq_len: 32, lr: 3e-3, grad_clip: 1.0, seed: 7}\n"
                 "eval: {batches: 2}\ncheckpoint: {every: 0}\nmetrics: {peak_flops: 1e10}\nruntime: {threads: 1}\n");
  std::string command = gradsweep_binary().string() + " train " + cell.string() + " --out " + (dir / out).string();
  for (const auto& o : overrides) command += " --set " + o;
  return read_run(run_command(mpirun(ranks, command + extra, "", 120)), dir / out);
}

TrainingRun read_run(CommandResult result, const fs::path& dir) {
  TrainingRun run;
  run.result = std::move(result);
  run.dir = dir;
  std::ifstream metrics(run.dir / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) run.steps.push_back(nlohmann::json::parse(line));
  if (fs::exists(run.dir / "summary.json")) run.summary = nlohmann::json::parse(read_text(run.dir / "summary.json"));
  return run;
}

}  // namespace gradsweep::test
