// Pre-tokenized data from Python, end to end: .npy files written by numpy itself (uint16, uint32, int32)
// go through `gradsweep prepare` to the same ids in gradsweep's shards; numpy arrays that are not token ids
// are refused naming the file; and a data set prepared from them is accepted by `gradsweep plan` and trains
// a gpt2-tiny cell. Needs numpy in GRADSWEEP_TEST_PYTHON (the project's .venv): without it the tests skip,
// except under CI (CI=true), where they fail.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/token_shard.hpp"
#include "support/python_reference.hpp"

namespace gradsweep {
namespace {
namespace fs = std::filesystem;

// Skips (or fails under CI) when the test's Python has no numpy.
#define REQUIRE_NUMPY() GRADSWEEP_REQUIRE_PYTHON(GRADSWEEP_TEST_PYTHON, "numpy")

// Runs a Python script (numpy imported as np, `out` the scratch directory) and fails the test on an error.
void python(const fs::path& dir, const std::string& body) {
  test::write_text(dir / "make.py", "import numpy as np\nout = '" + dir.string() + "'\n" + body);
  const auto r = test::run_command(std::string(GRADSWEEP_TEST_PYTHON) + " " + (dir / "make.py").string() + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

std::vector<int32_t> read_ids(const fs::path& text) {
  std::istringstream in(test::read_text(text));
  std::vector<int32_t> ids;
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

test::CommandResult prepare(const std::string& args) {
  return test::run_command(test::gradsweep_binary().string() + " prepare " + args + " 2>&1");
}

// 200 documents of GPT-2 ids, each preceded by end-of-text 50256 as llm.c's fineweb.py writes them.
const char* kGpt2Stream = R"(
rng = np.random.default_rng(5)
docs = [rng.integers(0, 50256, size=int(rng.integers(1, 40))) for _ in range(200)]
stream = np.concatenate([np.concatenate([[50256], d]) for d in docs])
for dtype in (np.uint16, np.uint32, np.int32):
    np.save(f'{out}/ids_{np.dtype(dtype).name}.npy', stream.astype(dtype))
np.save(f'{out}/matrix.npy', stream[:100].astype(np.uint16).reshape(10, 10))
np.save(f'{out}/float.npy', stream.astype(np.float64))
open(f'{out}/ids.txt', 'w').write(' '.join(map(str, stream.tolist())))
)";

TEST(PrepareTokensProcess, NumpyFilesGiveTheSameIdsInGradsweepShards) {
  REQUIRE_NUMPY();
  const fs::path dir = test::scratch_dir();
  python(dir, kGpt2Stream);
  const std::vector<int32_t> expected = read_ids(dir / "ids.txt");
  ASSERT_GT(expected.size(), 2000u);
  for (const char* dtype : {"uint16", "uint32", "int32"}) {
    const fs::path out = dir / (std::string("out-") + dtype);
    const auto r = prepare("--input " + (dir / (std::string("ids_") + dtype + ".npy")).string() + " --out " +
                           out.string() + " --vocab-size 50257 --eot-id 50256 --shuffle-seed -1 --val-fraction 0");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("200 documents from 1 file(s) with the external tokenizer (vocab size 50257, "
                            "end-of-text 50256, 16-bit ids)"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(data::read_token_shard(out / "train.bin"), expected) << dtype;
    const auto dataset = nlohmann::json::parse(test::read_text(out / "dataset.json"));
    EXPECT_EQ(dataset["sources"][0]["holds"], std::string(dtype) + " .npy");
    EXPECT_EQ(dataset["tokenizer"]["name"], "external");
  }
  // numpy's own files that are not 1-D ids, and one cut short, are refused naming the file and what it holds.
  const std::string whole = test::read_text(dir / "ids_uint16.npy");
  test::write_text(dir / "cut.npy", whole.substr(0, whole.size() - 1));
  for (const auto& [file, why] : {std::pair{"matrix.npy", "holds a 2-D array of shape (10, 10)"},
                                  {"float.npy", "holds a numpy array of dtype '<f8'"},
                                  {"cut.npy", "truncated or corrupt .npy file"}}) {
    const auto r = prepare("--input " + (dir / file).string() + " --out " + (dir / "refused").string() +
                           " --vocab-size 50257 --eot-id 50256");
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find((dir / file).string() + ": "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "refused")) << file;
  }
}

// Ids of a 300-id tokenizer (end-of-text 299) in two .npy files named by a glob: prepared, planned against
// gpt2's vocabulary, trained.
TEST(PrepareTokensProcess, APretokenizedDataSetPlansAndTrains) {
  REQUIRE_NUMPY();
  const fs::path dir = test::scratch_dir();
  python(dir, R"(
rng = np.random.default_rng(7)
for part in range(2):
    docs = [np.arange(s, s + int(rng.integers(5, 40))) % 299 for s in rng.integers(0, 299, size=200)]
    np.save(f'{out}/train_{part}.npy', np.concatenate([np.concatenate([[299], d]) for d in docs]).astype(np.uint16))
)");
  const fs::path data = dir / "data";
  const auto prepared = prepare("--input '" + (dir / "train_*.npy").string() + "' --out " + data.string() +
                                " --vocab-size 300 --eot-id 299 --shard-tokens 3000");
  ASSERT_EQ(prepared.exit_code, 0) << prepared.output;
  EXPECT_NE(prepared.output.find("400 documents from 2 file(s)"), std::string::npos) << prepared.output;
  const auto nothing = prepare("--input '" + (dir / "valid_*.npy").string() + "' --out " + (dir / "none").string() +
                               " --vocab-size 300 --eot-id 299");
  EXPECT_NE(nothing.exit_code, 0);
  EXPECT_NE(nothing.output.find((dir / "valid_*.npy").string() + ": the glob matches no file"), std::string::npos)
      << nothing.output;

  const std::string data_section =
      "data: {train: " + (data / "train").string() + ", val: " + (data / "val").string() + "}\n";
  const auto plan = [&](int vocab) {
    test::write_text(dir / "exp.yaml", "model: {name: gpt2, preset: gpt2-tiny, vocab_size: " + std::to_string(vocab) +
                                           ", block_size: 32}\nstrategy: {name: single}\n" + data_section +
                                           "train: {steps: 2, batch_size: 4, seq_len: 32}\n");
    return test::run_command("timeout 120 " + test::gradsweep_binary().string() + " plan " +
                             (dir / "exp.yaml").string() + " --out " + (dir / "plan").string() + " 2>&1");
  };
  const auto fits = plan(300);
  EXPECT_EQ(fits.exit_code, 0) << fits.output;
  const auto small = plan(200);
  EXPECT_NE(small.exit_code, 0) << small.output;
  EXPECT_NE(small.output.find("set model.vocab_size to at least"), std::string::npos) << small.output;

  test::write_text(dir / "cell.yaml",
                   "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 300, block_size: 32}\n"
                   "strategy: {name: single}\n" +
                       data_section +
                       "train: {steps: 4, batch_size: 4, seq_len: 32, lr: 3e-3, seed: 3}\n"
                       "eval: {batches: 1}\ncheckpoint: {every: 0}\nruntime: {threads: 1}\n");
  const auto trained = test::run_command("timeout 240 " + test::gradsweep_binary().string() + " train " +
                                         (dir / "cell.yaml").string() + " --out " + (dir / "run").string() + " 2>&1");
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  std::ifstream metrics(dir / "run" / "metrics.jsonl");
  int steps = 0;
  for (std::string line; std::getline(metrics, line);)
    if (nlohmann::json::parse(line).contains("loss")) ++steps;
  EXPECT_EQ(steps, 4);
}

}  // namespace
}  // namespace gradsweep
