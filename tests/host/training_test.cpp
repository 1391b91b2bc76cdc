// End-to-end training through the real CLI, on real English text: loss falls, runs are reproducible,
// and an interrupted run resumes bit for bit.
#include "data/token_shard.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A cell config for the byte-level fortunes corpus; `model` is the model section's body.
// `data` is a prepared corpus's folder (train.bin, val.bin); the byte corpus when empty.
fs::path write_config(const fs::path& dir, const std::string& model, int steps, const std::string& extra = "",
                      int batch_size = 8, const fs::path& data = {}) {
  const fs::path corpus = data.empty() ? test::byte_corpus() : data;
  const fs::path file = dir / "cell.yaml";
  test::write_text(file, "model:\n" + model + "\ndata:\n  train: " + (corpus / "train.bin").string() + "\n  val: " +
                             (corpus / "val.bin").string() + "\ntrain:\n  steps: " + std::to_string(steps) +
                             "\n  batch_size: " + std::to_string(batch_size) +
                             "\n  micro_batch: 4\n  seq_len: 64\n  lr: 3e-3\n  min_lr: 3e-4\n"
                             "  warmup_steps: 10\n  weight_decay: 0.01\n  seed: 7\neval:\n  batches: 4\n"
                             "metrics:\n  peak_flops: 1e10\n  log_every: 50\nruntime:\n  threads: 1\n" +
                             extra);
  return file;
}

std::vector<double> losses(const fs::path& metrics) {
  std::vector<double> out;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line).at("loss").get<double>());
  return out;
}

double mean(const std::vector<double>& v, std::size_t from, std::size_t to) {
  double s = 0;
  for (std::size_t i = from; i < to; ++i) s += v[i];
  return s / static_cast<double>(to - from);
}

test::CommandResult train(const fs::path& config, const fs::path& out, const std::string& flags = "") {
  return test::run_command(test::gradsweep_binary().string() + " train " + config.string() + " --out " + out.string() +
                           " " + flags);
}

// Cross-entropy of the best context-free model (unigram frequencies of the training shard): a model
// whose validation loss is clearly below it has learned to use context.
double unigram_entropy(const fs::path& shard) {
  const std::vector<std::int32_t> tokens = data::read_token_shard(shard);
  std::map<std::int32_t, double> counts;
  for (auto t : tokens) counts[t] += 1;
  double h = 0;
  for (const auto& [t, c] : counts) h -= c / tokens.size() * std::log(c / tokens.size());
  return h;
}

void expect_loss_falls(const std::string& model_section) {
  const fs::path dir = test::scratch_dir();
  const auto r = train(write_config(dir, model_section, 300, "", 16), dir / "cell");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto l = losses(dir / "cell" / "metrics.jsonl");
  ASSERT_EQ(l.size(), 300u);
  const double first = mean(l, 0, 10), last = mean(l, 290, 300);
  // Bytes start near ln(257) = 5.5 nats. Letter frequencies alone give the unigram entropy (about 3.3
  // nats on this text); going clearly below it on held-out text means the model uses context.
  EXPECT_GT(first, 4.0);
  EXPECT_LT(last, first - 1.5) << "first " << first << " last " << last;
  const json summary = json::parse(test::read_text(dir / "cell" / "summary.json"));
  EXPECT_EQ(summary["status"], "ok");
  const double unigram = unigram_entropy(test::byte_corpus() / "train.bin");
  EXPECT_LT(summary["val_loss"].get<double>(), unigram - 0.2) << "unigram entropy " << unigram;
  EXPECT_NEAR(summary["val_ppl"].get<double>(), std::exp(summary["val_loss"].get<double>()), 1e-6);
  for (const char* key :
       {"model", "strategy", "world_size", "params", "steps", "tokens_per_sec", "step_time_s", "final_train_loss",
        "val_loss", "val_ppl", "bytes_sent_per_step", "mfu", "peak_rss_mb", "config"})
    EXPECT_TRUE(summary.contains(key)) << key;
  EXPECT_GT(summary["tokens_per_sec"].get<double>(), 0.0);
  EXPECT_GT(summary["mfu"].get<double>(), 0.0);
  EXPECT_EQ(summary["world_size"], 1);
  EXPECT_EQ(summary["config"]["train"]["steps"], 300);
}

TEST(Training, Gpt2TinyLossFallsOnRealText) {
  expect_loss_falls("  name: gpt2\n  preset: gpt2-tiny\n  vocab_size: 257\n  block_size: 64");
}

TEST(Training, LstmTinyLossFallsOnRealText) {
  expect_loss_falls("  name: lstm_lm\n  preset: lstm-tiny\n  vocab_size: 257");
}

TEST(Training, Bf16AutocastTracksFp32) {
  const fs::path dir = test::scratch_dir();
  const fs::path config = write_config(dir, "  name: gpt2\n  preset: gpt2-tiny\n  vocab_size: 257", 40);
  ASSERT_EQ(train(config, dir / "fp32").exit_code, 0);
  const auto r = train(config, dir / "bf16", "--set strategy.name=single --set strategy.precision=bf16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto fp32 = losses(dir / "fp32" / "metrics.jsonl"), bf16 = losses(dir / "bf16" / "metrics.jsonl");
  ASSERT_EQ(bf16.size(), 40u);
  EXPECT_NE(fp32, bf16);  // autocast really changed the arithmetic
  EXPECT_NEAR(mean(bf16, 30, 40), mean(fp32, 30, 40), 0.05 * mean(fp32, 30, 40));
  EXPECT_LT(mean(bf16, 30, 40), mean(bf16, 0, 10) - 1.0);
  const auto bad = train(config, dir / "fp16", "--set strategy.name=single --set strategy.precision=fp16");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("strategy.precision: 'fp16' is not one of fp32, bf16"), std::string::npos) << bad.output;
}

// metrics.jsonl's `minor_faults` of the last `steps` steps together.
long faults_over_last_steps(const fs::path& metrics, std::size_t steps) {
  std::vector<long> faults;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) faults.push_back(json::parse(line).at("minor_faults").get<long>());
  EXPECT_GT(faults.size(), steps);
  return faults.size() > steps ? faults.back() - faults[faults.size() - 1 - steps] : -1;
}

// A step's activations come back from the heap the previous step freed them to, not as fresh pages from the
// kernel (host/train/memory_reuse.hpp); a user's own malloc tuning is left in force.
TEST(Training, StepsReuseFreedMemoryUnlessTheUserTunedMalloc) {
  const fs::path dir = test::scratch_dir();
  const fs::path config =
      write_config(dir, "  name: gpt2\n  preset: gpt2-small-cpu\n  vocab_size: 257\n  block_size: 64", 8, "", 4);
  ASSERT_EQ(train(config, dir / "kept").exit_code, 0);
  const long kept = faults_over_last_steps(dir / "kept" / "metrics.jsonl", 4);
  // Any tunable set means "leave malloc as I said": glibc's defaults then give memory back between steps.
  const auto tuned = test::run_command("GLIBC_TUNABLES=glibc.malloc.check=0 " + test::gradsweep_binary().string() +
                                       " train " + config.string() + " --out " + (dir / "tuned").string());
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_NE(tuned.output.find("malloc's thresholds left as they are"), std::string::npos) << tuned.output;
  const long given_back = faults_over_last_steps(dir / "tuned" / "metrics.jsonl", 4);
  // LibTorch 2.15 on this model: 100-420 faults over 4 steps kept (its kernels' own small buffers), 3,300
  // or more given back; without the reuse both are the latter.
  EXPECT_LT(kept, 1000) << "minor faults over 4 steps with freed memory kept";
  EXPECT_GT(given_back, 4 * std::max(kept, 100L)) << "with glibc's defaults: " << given_back << ", kept: " << kept;
}

TEST(Training, SameSeedGivesIdenticalLosses) {
  const fs::path dir = test::scratch_dir();
  const fs::path config = write_config(dir, "  name: gpt2\n  preset: gpt2-tiny\n  vocab_size: 257\n  dropout: 0.1", 15);
  ASSERT_EQ(train(config, dir / "a").exit_code, 0);
  ASSERT_EQ(train(config, dir / "b").exit_code, 0);
  // Exactness is promised on the CPU: full float32 products, as LibTorch reported them, and TF32 off.
  const auto summary = json::parse(test::read_text(dir / "a" / "summary.json"));
  EXPECT_EQ(summary.at("float32_matmul_precision"), "highest") << summary.dump();
  const std::string resolved = test::read_text(dir / "a" / "config.resolved.yaml");
  EXPECT_TRUE(resolved.find("tf32: off") != std::string::npos || resolved.find("tf32: \"off\"") != std::string::npos)
      << resolved;
  EXPECT_EQ(losses(dir / "a" / "metrics.jsonl"), losses(dir / "b" / "metrics.jsonl"));
  // And a different seed really changes them (so the equality above is not vacuous).
  ASSERT_EQ(train(config, dir / "c", "--set train.seed=8").exit_code, 0);
  EXPECT_NE(losses(dir / "a" / "metrics.jsonl"), losses(dir / "c" / "metrics.jsonl"));
}

TEST(Training, InterruptedRunResumesBitIdentical) {
  const fs::path dir = test::scratch_dir();
  // Dropout on, so the restored random generator matters too.
  const fs::path config = write_config(dir, "  name: gpt2\n  preset: gpt2-tiny\n  vocab_size: 257\n  dropout: 0.1", 30,
                                       "checkpoint:\n  every: 5\n");
  ASSERT_EQ(train(config, dir / "whole").exit_code, 0);
  // Interrupted after 12 steps: the last checkpoint is at step 10, steps 10 and 11 are redone.
  const auto first = train(config, dir / "resumed", "--stop-after 12");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_FALSE(fs::exists(dir / "resumed" / "summary.json"));
  EXPECT_EQ(losses(dir / "resumed" / "metrics.jsonl").size(), 12u);
  const auto second = train(config, dir / "resumed");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from"), std::string::npos) << second.output;
  const auto whole = losses(dir / "whole" / "metrics.jsonl");
  const auto resumed = losses(dir / "resumed" / "metrics.jsonl");
  ASSERT_EQ(resumed.size(), 30u);
  EXPECT_EQ(whole, resumed);  // bit-identical, not approximately equal
}

// 32-bit shards end to end (llm.c's uint32 layout): a word vocabulary of 100,002 ids whose training split
// holds ids above 65,535 trains, and an interrupted run resumes bit for bit, as on the byte corpus.
TEST(Training, ThirtyTwoBitShardsWithIdsAbove65535TrainAndResumeBitIdentical) {
  const fs::path dir = test::scratch_dir();
  {
    std::ofstream text(dir / "words.txt");  // 100 documents of 1,000 distinct words each
    for (int d = 0; d < 100; ++d) {
      for (int w = 0; w < 1000; ++w) text << "w" << (d * 1000 + w) << (w % 20 == 19 ? "\n" : " ");
      text << "\n\n";
    }
  }
  const auto prepared = test::run_command(test::gradsweep_binary().string() +
                                          " prepare --tokenizer word --vocab 100000 " + "--val-fraction 0.1 --input " +
                                          (dir / "words.txt").string() + " --out " + (dir / "wide").string());
  ASSERT_EQ(prepared.exit_code, 0) << prepared.output;
  EXPECT_NE(prepared.output.find("32-bit ids"), std::string::npos) << prepared.output;
  const std::vector<std::int32_t> tokens = data::read_token_shard(dir / "wide" / "train.bin");
  ASSERT_FALSE(tokens.empty());
  EXPECT_GT(*std::max_element(tokens.begin(), tokens.end()), 65535);

  const fs::path config = write_config(dir, "  name: gpt2\n  preset: gpt2-tiny\n  vocab_size: 100002", 16,
                                       "checkpoint:\n  every: 5\n", 8, dir / "wide");
  const auto whole_run = train(config, dir / "whole");
  ASSERT_EQ(whole_run.exit_code, 0) << whole_run.output;
  const auto first = train(config, dir / "resumed", "--stop-after 12");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto second = train(config, dir / "resumed");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from"), std::string::npos) << second.output;
  const auto whole = losses(dir / "whole" / "metrics.jsonl");
  ASSERT_EQ(whole.size(), 16u);
  // From ln(100002) = 11.5 at the start: finite, and lower at the end.
  for (const double loss : whole) EXPECT_TRUE(std::isfinite(loss)) << loss;
  EXPECT_LT(whole.back(), whole.front());
  EXPECT_EQ(whole, losses(dir / "resumed" / "metrics.jsonl"));  // bit-identical
}

}  // namespace
}  // namespace gradsweep
