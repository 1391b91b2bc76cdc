#include "cli/prepare_command.hpp"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "data/prepare.hpp"
#include "data/split_paths.hpp"
#include "data/token_shard.hpp"

namespace gradsweep::cli {
namespace {

// " (12 shards)" after a directory of shards; nothing after a single file.
std::string shards(int64_t count) { return count > 1 ? " (" + std::to_string(count) + " shards)" : ""; }

void print_summary(const data::PrepareResult& r, std::ostream& out) {
  out << "prepared " << r.train_documents + r.val_documents << " documents from " << r.sources.size()
      << " file(s) with the " << r.tokenizer << " tokenizer (vocab size " << r.vocab_size << ", "
      << (r.tokenizer_path.empty() ? "end-of-text " + std::to_string(r.end_of_text) + ", " : "") << 8 * r.token_bytes
      << "-bit ids)\n"
      << "  train: " << r.train_tokens << " tokens, " << r.train_documents << " documents -> " << r.train_path.string()
      << shards(r.train_shards) << "\n"
      << "  val:   " << r.val_tokens << " tokens, " << r.val_documents << " documents -> " << r.val_path.string()
      << shards(r.val_shards) << "\n"
      << "  tokenizer: "
      << (r.tokenizer_path.empty() ? "external (the inputs were token ids; none written)" : r.tokenizer_path.string())
      << "\n"
      << "  dataset:   " << r.dataset_path.string() << "\n";
}

// --input takes globs (expanded by prepare, which names a glob that matches nothing), so only a plain path
// must exist when the command line is read.
const CLI::Validator kPathOrGlob(
    [](std::string& input) -> std::string {
      if (data::is_glob(input) || std::filesystem::exists(input)) return "";
      return "Path does not exist: " + input;
    },
    "PATH|GLOB");

// Input formats and what reads pre-tokenized ids: the options beside --tokenizer.
void add_input_options(CLI::App* cmd, data::PrepareOptions& options) {
  cmd->add_option("--input-format", options.input_format,
                  "auto (by extension: .jsonl, .npy, .bin llm.c shards, else text), or for every input: text, "
                  "jsonl, npy, raw (little-endian ids, --raw-bits), llmc")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "text", "jsonl", "npy", "raw", "llmc"}));
  cmd->add_option("--field", options.jsonl_field, "jsonl: the string field holding each line's document")
      ->capture_default_str();
  cmd->add_option_function<int>(
         "--raw-bits", [&options](int bits) { options.raw_token_bytes = bits / 8; },
         "raw: the width of each little-endian id, 16 or 32")
      ->check(CLI::IsMember({16, 32}));
  cmd->add_option("--vocab-size", options.external_vocab_size,
                  "pre-tokenized inputs: the vocabulary size of the tokenizer that made them (every id below it)")
      ->check(CLI::Range(int64_t{1}, data::kShardMaxVocab32));
  cmd->add_option("--eot-id", options.external_end_of_text,
                  "pre-tokenized inputs: the end-of-text id that separates their documents")
      ->check(CLI::Range(int64_t{0}, data::kShardMaxVocab32 - 1));
}

}  // namespace

void register_prepare_command(CLI::App& app) {
  // Shared with the callback, which runs after parsing has filled it.
  auto options = std::make_shared<data::PrepareOptions>();
  CLI::App* cmd = app.add_subcommand(
      "prepare",
      "Tokenize text files into llm.c token shards (train.bin, val.bin) plus tokenizer.json and dataset.json");
  cmd->add_option("--input,-i", options->inputs,
                  "Files, directories (read recursively; *.dat, hidden and binary text files skipped) or globs: "
                  "text, JSON Lines, or token ids (see --input-format)")
      ->required()
      ->check(kPathOrGlob);
  cmd->add_option("--out,-o", options->out_dir, "Output directory (created if missing)")->required();
  CLI::Option* tokenizer =
      cmd->add_option("--tokenizer,-t", options->tokenizer,
                      "byte (257 ids), word (top --vocab words), bpe (GPT-2) or hf (a Hugging Face "
                      "tokenizer.json, --tokenizer-file); required for text, left out (or external) for "
                      "pre-tokenized inputs")
          ->check(CLI::IsMember({"byte", "word", "bpe", "hf", "external"}));
  add_input_options(cmd, *options);
  CLI::Option* vocab = cmd->add_option("--vocab", options->vocab,
                                       "word: vocabulary size including <unk> and <eos> (above 65536: 32-bit shards)")
                           ->capture_default_str()
                           ->check(CLI::Range(int64_t{2}, data::kShardMaxVocab32));
  CLI::Option* lowercase = cmd->add_flag("--lowercase", options->lowercase, "word: lowercase ASCII letters first");
  cmd->add_option("--bpe-encoder", options->bpe_encoder, "bpe: GPT-2 encoder.json")->check(CLI::ExistingFile);
  cmd->add_option("--bpe-merges", options->bpe_merges, "bpe: GPT-2 vocab.bpe")->check(CLI::ExistingFile);
  cmd->add_option("--tokenizer-file", options->tokenizer_file,
                  "hf: a Hugging Face tokenizer.json of the byte-level BPE kind (GPT-2's, Llama-3's)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--eot-token", options->eot_token,
                  "hf: the token placed between documents (default <|endoftext|>, else <|end_of_text|>)");
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
         "Text shuffled in memory at once, in MiB: a larger corpus is shuffled in buckets on disk, "
         "so memory stays about this whatever the corpus")
      ->default_str(std::to_string(options->shuffle_bucket_bytes >> 20))
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--val-fraction", options->val_fraction,
                  "Fraction of documents, taken from the end, that form val.bin (in [0, 1))")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));

  cmd->callback([options, vocab, lowercase, tokenizer] {
    if (tokenizer->count() == 0) options->tokenizer.clear();  // prepare_corpus: external for ids, else refused
    if ((options->input_format == "raw") != (options->raw_token_bytes != 0)) {
      throw CLI::ValidationError("--input-format raw",
                                 "and --raw-bits 16|32 go together (raw ids have no header "
                                 "to tell their width)");
    }
    if (options->tokenizer == "bpe" && (options->bpe_encoder.empty() || options->bpe_merges.empty())) {
      throw CLI::ValidationError("--tokenizer bpe",
                                 "needs --bpe-encoder encoder.json and --bpe-merges vocab.bpe (GPT-2's files; "
                                 "scripts/gpt2_vocab_dir.sh prints where .venv has them, see docs/data.md)");
    }
    if (options->tokenizer == "hf" && options->tokenizer_file.empty()) {
      throw CLI::ValidationError("--tokenizer hf", "needs --tokenizer-file tokenizer.json (see docs/data.md)");
    }
    if (options->tokenizer != "hf" && (!options->tokenizer_file.empty() || !options->eot_token.empty())) {
      throw CLI::ValidationError("--tokenizer-file/--eot-token", "apply to --tokenizer hf only");
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
