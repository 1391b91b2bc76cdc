#include "cli/prepare_command.hpp"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "data/prepare.hpp"
#include "data/token_shard.hpp"

namespace gradsweep::cli {
namespace {

// " (12 shards)" after a directory of shards; nothing after a single file.
std::string shards(int64_t count) { return count > 1 ? " (" + std::to_string(count) + " shards)" : ""; }

void print_summary(const data::PrepareResult& r, std::ostream& out) {
  out << "prepared " << r.train_documents + r.val_documents << " documents from " << r.sources.size()
      << " file(s) with the " << r.tokenizer << " tokenizer (vocab size " << r.vocab_size << ", " << 8 * r.token_bytes
      << "-bit ids)\n"
      << "  train: " << r.train_tokens << " tokens, " << r.train_documents << " documents -> " << r.train_path.string()
      << shards(r.train_shards) << "\n"
      << "  val:   " << r.val_tokens << " tokens, " << r.val_documents << " documents -> " << r.val_path.string()
      << shards(r.val_shards) << "\n"
      << "  tokenizer: " << r.tokenizer_path.string() << "\n"
      << "  dataset:   " << r.dataset_path.string() << "\n";
}

}  // namespace

void register_prepare_command(CLI::App& app) {
  // Shared with the callback, which runs after parsing has filled it.
  auto options = std::make_shared<data::PrepareOptions>();
  CLI::App* cmd = app.add_subcommand(
      "prepare",
      "Tokenize text files into llm.c token shards (train.bin, val.bin) plus tokenizer.json and dataset.json");
  cmd->add_option("--input,-i", options->inputs,
                  "Text files or directories (read recursively; *.dat, hidden and binary files skipped)")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("--out,-o", options->out_dir, "Output directory (created if missing)")->required();
  cmd->add_option("--tokenizer,-t", options->tokenizer, "byte (257 ids), word (top --vocab words) or bpe (GPT-2)")
      ->required()
      ->check(CLI::IsMember({"byte", "word", "bpe"}));
  CLI::Option* vocab = cmd->add_option("--vocab", options->vocab,
                                       "word: vocabulary size including <unk> and <eos> (above 65536: 32-bit shards)")
                           ->capture_default_str()
                           ->check(CLI::Range(int64_t{2}, data::kShardMaxVocab32));
  CLI::Option* lowercase = cmd->add_flag("--lowercase", options->lowercase, "word: lowercase ASCII letters first");
  cmd->add_option("--bpe-encoder", options->bpe_encoder, "bpe: GPT-2 encoder.json")->check(CLI::ExistingFile);
  cmd->add_option("--bpe-merges", options->bpe_merges, "bpe: GPT-2 vocab.bpe")->check(CLI::ExistingFile);
  cmd->add_option("--shuffle-seed", options->shuffle_seed,
                  "Shuffle documents with this seed before the train/val split (negative: keep file order)")
      ->capture_default_str();
  cmd->add_option("--shard-tokens", options->shard_tokens,
                  "Tokens per shard: write OUT/train/ and OUT/val/ as shards of this many tokens "
                  "(0: one file per split, train.bin and val.bin)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, data::kShardMaxTokens));
  cmd->add_option_function<int64_t>(
         "--shuffle-bucket-mb", [options](int64_t mb) { options->shuffle_bucket_bytes = mb << 20; },
         "Text shuffled in memory at once, in MiB (default 64): a larger corpus is shuffled in buckets on disk, "
         "so memory stays about this whatever the corpus")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--val-fraction", options->val_fraction,
                  "Fraction of documents, taken from the end, that form val.bin (in [0, 1))")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));

  cmd->callback([options, vocab, lowercase] {
    if (options->tokenizer == "bpe" && (options->bpe_encoder.empty() || options->bpe_merges.empty())) {
      throw CLI::ValidationError("--tokenizer bpe",
                                 "needs --bpe-encoder encoder.json and --bpe-merges vocab.bpe (GPT-2's files; "
                                 "scripts/gpt2_vocab_dir.sh prints where .venv has them, see docs/data.md)");
    }
    if (options->tokenizer != "word" && (vocab->count() > 0 || lowercase->count() > 0)) {
      throw CLI::ValidationError("--vocab/--lowercase", "apply to --tokenizer word only");
    }
    if (options->val_fraction >= 1.0) {
      throw CLI::ValidationError("--val-fraction", "must be below 1 (some documents must remain for training)");
    }
    print_summary(data::prepare_corpus(*options), std::cout);
  });
}

}  // namespace gradsweep::cli
