// `gradsweep prepare`: raw text -> tokenized, split, ready-to-train data set directory (see docs/data.md):
//   out_dir/train.bin, out_dir/val.bin   llm.c token shards (token_shard.hpp), 16-bit ids below 65,537 ids
//                                        and 32-bit above; with shard_tokens > 0 the directories
//                                        out_dir/train/, out_dir/val/ of shards of that many tokens
//   out_dir/tokenizer.json               the tokenizer, reloadable with load_tokenizer_file()
//   out_dir/dataset.json                 provenance and counts; written last, so its presence means complete
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::data {

struct PrepareOptions {
  std::vector<std::filesystem::path> inputs;  // files, directories or globs (find_input_files(), input_files.hpp)
  std::filesystem::path out_dir;
  // "auto" (by extension: .jsonl, .npy, .bin llm.c shards, else text) or one kind for every input: "text",
  // "jsonl", "npy", "raw", "llmc" (input_files.hpp).
  std::string input_format = "auto";
  std::string jsonl_field = "text";  // jsonl: the string field holding each line's document
  int raw_token_bytes = 0;           // raw: 2 (uint16) or 4 (uint32)
  // Pre-tokenized inputs (npy, raw, llmc) carry ids of a tokenizer gradsweep does not have: its vocabulary
  // size (every id below it) and the end-of-text id between documents. The data set's tokenizer is then
  // "external" (tokenizer "" or "external" here).
  int64_t external_vocab_size = 0;
  int64_t external_end_of_text = -1;
  // "byte" | "word" | "bpe" | "hf" for text; "external" for token ids; "" (not given): external for token ids,
  // refused for text.
  std::string tokenizer = "byte";
  int64_t vocab = 10000;                          // word: total ids including <unk> and <eos>
  bool lowercase = false;                         // word
  std::filesystem::path bpe_encoder, bpe_merges;  // bpe: GPT-2's encoder.json and vocab.bpe
  // hf: a Hugging Face tokenizer.json (byte-level BPE), and the token placed between documents (empty:
  // "<|endoftext|>", else "<|end_of_text|>"; load_hf_tokenizer() in tokenizer.hpp).
  std::filesystem::path tokenizer_file;
  std::string eot_token;
  double val_fraction = 0.05;  // the last this fraction of documents, in [0, 1)
  // Documents are shuffled with this seed before the split (negative: keep file order). Token shards are
  // read sequentially, so without it consecutive steps would see one topic file after another and the
  // validation split would be the last files' topics only.
  int64_t shuffle_seed = 1234;
  // Tokens per shard; 0 writes one file per split (at most 2^31-1 tokens, the llm.c header's count).
  int64_t shard_tokens = 0;
  // Text shuffled in memory at once (document_spool.hpp): a larger corpus is shuffled in buckets of this
  // size on disk, so prepare's memory does not grow with the corpus.
  int64_t shuffle_bucket_bytes = int64_t{64} << 20;
};

struct PrepareResult {
  std::vector<std::filesystem::path> sources;
  std::string tokenizer;
  int64_t vocab_size = 0;
  int token_bytes = 2;
  int64_t train_documents = 0, val_documents = 0;
  int64_t train_tokens = 0, val_tokens = 0;
  // train.bin / val.bin, or the directories train/ / val/ of shards: what data.train / data.val name.
  // tokenizer_path is empty for an external tokenizer (pre-tokenized inputs): there is none to write.
  std::filesystem::path train_path, val_path, tokenizer_path, dataset_path;
  int64_t end_of_text = 0;
  int64_t train_shards = 1, val_shards = 1;
};

// Reads the inputs (text, JSON Lines, or pre-tokenized ids: then documents are the runs between end-of-text
// ids and no tokenizer is fit or written), splits documents into train (first) and val (last val_fraction, at
// least one when the fraction is positive), fits or loads the tokenizer (a word vocabulary is fit on train
// documents only, so validation words never leak into it), encodes each document preceded by the end-of-text
// token (as llm.c's data scripts do), and writes the files atomically. Streams: the text is read document by document
// and the shards are written as they are encoded, so memory is bounded by shuffle_bucket_bytes, not the corpus (a word
// vocabulary's counts grow with the distinct words). Throws std::invalid_argument for bad options and
// std::runtime_error for unusable inputs (naming the file).
PrepareResult prepare_corpus(const PrepareOptions& options);

}  // namespace gradsweep::data
