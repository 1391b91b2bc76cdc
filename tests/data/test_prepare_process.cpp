// `gradsweep prepare` as a process: shards of a chosen size, 32-bit ids for a vocabulary above 65,536, and
// memory that does not grow with the corpus (its peak RSS, measured by the kernel, on two corpus sizes).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "data/token_shard.hpp"
#include "data/token_split.hpp"
#include "support/test_support.hpp"

namespace gradsweep {
namespace {
namespace fs = std::filesystem;

struct Measured {
  int exit_code = -1;
  long max_rss_kb = 0;  // the child's peak resident set, from wait4
  std::string output;
};

// `gradsweep args...` in a child of its own, so that its peak RSS is its alone.
Measured run_measured(const std::vector<std::string>& args, const fs::path& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<std::string> full{test::gradsweep_binary().string()};
    full.insert(full.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : full) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  Measured m;
  int status = 0;
  struct rusage usage {};
  ::wait4(pid, &status, 0, &usage);
  m.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  m.max_rss_kb = usage.ru_maxrss;
  m.output = test::read_text(log);
  return m;
}

// About `bytes` of English-like paragraphs (documents) separated by blank lines, the same text every time.
void write_corpus(const fs::path& path, int64_t bytes) {
  static const char* words[] = {"the",   "data", "parallel", "gradient", "shard", "token", "model", "rank",
                                "batch", "step", "loss",     "train",    "of",    "and",   "a",     "is"};
  std::mt19937_64 rng(7);
  std::ofstream out(path, std::ios::binary);
  std::string paragraph;
  int64_t written = 0;
  while (written < bytes) {
    paragraph.clear();
    const int n = 100 + static_cast<int>(rng() % 300);
    for (int w = 0; w < n; ++w) paragraph += std::string(words[rng() % 16]) + ((w % 12 == 11) ? "\n" : " ");
    paragraph += "\n\n";
    out << paragraph;
    written += static_cast<int64_t>(paragraph.size());
  }
}

TEST(PrepareProcess, MemoryDoesNotGrowWithTheCorpus) {
  const fs::path dir = test::scratch_dir();
  struct Size {
    int64_t bytes;
    Measured run;
  };
  std::vector<Size> sizes{{int64_t{16} << 20, {}}, {int64_t{64} << 20, {}}};
  for (Size& s : sizes) {
    const fs::path text = dir / ("corpus-" + std::to_string(s.bytes) + ".txt");
    write_corpus(text, s.bytes);
    const fs::path out = dir / ("out-" + std::to_string(s.bytes));
    s.run = run_measured({"prepare", "--input", text.string(), "--out", out.string(), "--tokenizer", "byte",
                          "--shuffle-bucket-mb", "4", "--shard-tokens", "4000000"},
                         dir / "prepare.log");
    ASSERT_EQ(s.run.exit_code, 0) << s.run.output;
    // Every byte of text is a token (plus one end-of-text per document): the data went through.
    const data::TokenSplit train = data::TokenSplit::open({out / "train"});
    EXPECT_GT(train.size(), s.bytes * 9 / 10);
    EXPECT_GE(train.shards().size(), static_cast<size_t>(s.bytes / 4000000));
    fs::remove(text);
    std::printf("prepare of %lld MiB: peak RSS %ld KiB\n", static_cast<long long>(s.bytes >> 20), s.run.max_rss_kb);
  }
  // The old prepare held the text, its documents and 4-byte tokens: 48 MiB more text cost over 200 MiB
  // more memory. Now a 4 MiB bucket and fixed buffers: the growth must stay far below the text's growth.
  const long growth_kb = sizes[1].run.max_rss_kb - sizes[0].run.max_rss_kb;
  EXPECT_LT(growth_kb, 12 * 1024) << "peak RSS " << sizes[0].run.max_rss_kb << " KiB at 16 MiB, "
                                  << sizes[1].run.max_rss_kb << " KiB at 64 MiB of text";
}

TEST(PrepareProcess, ShardsOfAChosenSizeAreTheSameStreamAsOneFile) {
  const fs::path dir = test::scratch_dir();
  const std::string input = "/usr/share/games/fortunes/tao";
  const auto one = test::run_command(test::gradsweep_binary().string() + " prepare --tokenizer byte --input " + input +
                                     " --out " + (dir / "one").string());
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto many = test::run_command(test::gradsweep_binary().string() + " prepare --tokenizer byte --input " + input +
                                      " --out " + (dir / "many").string() + " --shard-tokens 5000");
  ASSERT_EQ(many.exit_code, 0) << many.output;
  EXPECT_NE(many.output.find((dir / "many" / "train").string() + " ("), std::string::npos) << many.output;
  EXPECT_FALSE(fs::exists(dir / "many" / "train.bin"));

  const data::TokenSplit whole = data::TokenSplit::open({dir / "one" / "train.bin"});
  const data::TokenSplit sharded = data::TokenSplit::open({dir / "many" / "train"});
  ASSERT_EQ(whole.size(), sharded.size());
  ASSERT_GT(sharded.shards().size(), 3u);
  for (size_t i = 0; i + 1 < sharded.shards().size(); ++i) EXPECT_EQ(sharded.shards()[i].size(), 5000);
  std::vector<int64_t> a(static_cast<size_t>(whole.size())), b(a.size());
  whole.copy_tokens(0, whole.size(), a.data());
  sharded.copy_tokens(0, sharded.size(), b.data());
  EXPECT_EQ(a, b);

  // dataset.json lists every shard with its token count and largest id, which planning reads.
  const auto dataset = nlohmann::json::parse(test::read_text(dir / "many" / "dataset.json"));
  EXPECT_EQ(dataset["files"]["train"], "train");
  ASSERT_EQ(dataset["shards"]["train"].size(), sharded.shards().size());
  EXPECT_EQ(dataset["shards"]["train"][0]["file"], "train/train_000000.bin");
  EXPECT_EQ(dataset["shards"]["train"][0]["tokens"], 5000);
  EXPECT_EQ(dataset["shards"]["train"][0]["max_id"], sharded.shards()[0].max_token());
  EXPECT_EQ(dataset["format"]["token_bytes"], 2);
}

// 72,000 distinct words in the training documents: a word vocabulary of 72,002 ids needs 32-bit shards
// (llm.c's uint32 format).
TEST(PrepareProcess, AVocabularyAbove65536IdsWrites32BitShards) {
  const fs::path dir = test::scratch_dir();
  {
    std::ofstream text(dir / "words.txt");
    for (int d = 0; d < 100; ++d) {
      for (int w = 0; w < 800; ++w) text << "w" << (d * 800 + w) << (w % 20 == 19 ? "\n" : " ");
      text << "\n\n";
    }
  }
  const auto r =
      test::run_command(test::gradsweep_binary().string() + " prepare --tokenizer word --vocab 80000 --input " +
                        (dir / "words.txt").string() + " --out " + (dir / "out").string() + " --val-fraction 0.1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(vocab size 72002, 32-bit ids)"), std::string::npos) << r.output;
  const data::TokenShard train = data::TokenShard::open(dir / "out" / "train.bin");
  EXPECT_EQ(train.token_bytes(), 4);
  EXPECT_GE(train.max_token(), 65536);  // ids a uint16 shard could not hold
  const std::string head = test::read_text(dir / "out" / "train.bin").substr(0, 8);
  int32_t magic_version[2];
  std::memcpy(magic_version, head.data(), 8);
  EXPECT_EQ(magic_version[0], 20240801);
  EXPECT_EQ(magic_version[1], 7);
  const auto dataset = nlohmann::json::parse(test::read_text(dir / "out" / "dataset.json"));
  EXPECT_EQ(dataset["format"]["token_bytes"], 4);
  EXPECT_EQ(dataset["format"]["magic"], 20240801);
}

}  // namespace
}  // namespace gradsweep
