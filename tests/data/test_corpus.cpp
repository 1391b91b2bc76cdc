// Which files are read and how they are cut into documents.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "data/corpus.hpp"
#include "data_test_support.hpp"

namespace gradsweep::data {
namespace {

using testing::TempDir;

TEST(SplitDocuments, FortuneFilesSplitAtPercentLines) {
  EXPECT_EQ(split_documents("first\n%\nsecond line 1\n\nsecond line 3\n%\n%\n\nthird\n\n%\n"),
            (std::vector<std::string>{"first", "second line 1\n\nsecond line 3", "third"}));
  EXPECT_EQ(split_documents("a\r\n%\r\nb"), (std::vector<std::string>{"a\r", "b"}));
}

TEST(SplitDocuments, OtherTextSplitsAtBlankLines) {
  EXPECT_EQ(split_documents("\n\npara one\nstill one\n\n   \n\t\npara two\n"),
            (std::vector<std::string>{"para one\nstill one", "para two"}));
  EXPECT_EQ(split_documents("50% off\n"), std::vector<std::string>{"50% off"});
  EXPECT_TRUE(split_documents("\n \n").empty());
}

TEST(SplitDocuments, AgreesWithAnIndependentSplitOfRealFortunes) {
  for (const char* name : {"computers", "tao", "riddles"}) {
    const std::string text = testing::read_file(testing::fortune_file(name));
    const auto docs = split_documents(text);
    EXPECT_EQ(docs, testing::fortune_quotes(text)) << name;
    EXPECT_GT(docs.size(), 50u) << name;
  }
}

TEST(LooksBinary, TellsFortuneIndexTablesFromText) {
  EXPECT_TRUE(looks_binary(std::string("abc\0def", 7)));
  EXPECT_FALSE(looks_binary("plain text\twith tabs\n"));
  EXPECT_FALSE(looks_binary("over_\bs_\bt_\br_\bi_\bk_\be \x1b[1mbold\x1b[0m\n"));
  EXPECT_TRUE(looks_binary("\x01\x02\x03\x04 ab"));
  EXPECT_TRUE(looks_binary(testing::read_file(testing::fortune_file("computers.dat"))));
  EXPECT_FALSE(looks_binary(testing::read_file(testing::fortune_file("fortunes"))));
}

TEST(FindTextFiles, ReadsFortunesOncePerQuotationFileInSortedOrder) {
  const auto files = find_text_files({testing::fortunes_dir()});
  ASSERT_GT(files.size(), 20u);
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end()));
  std::set<std::filesystem::path> canonical;
  for (const auto& f : files) {
    EXPECT_NE(f.extension(), ".dat") << f;
    EXPECT_NE(f.extension(), ".u8") << f << ": the .u8 names are symlinks to files already read";
    EXPECT_TRUE(canonical.insert(std::filesystem::canonical(f)).second) << f << " read twice";
  }
  EXPECT_NE(std::find(files.begin(), files.end(), testing::fortunes_dir() / "computers"), files.end());
}

TEST(FindTextFiles, SkipsHiddenDatBinaryAndDuplicateFiles) {
  TempDir dir;
  std::filesystem::create_directories(dir / "sub" / ".git");
  testing::write_file(dir / "b.txt", "b\n");
  testing::write_file(dir / "sub" / "a.txt", "a\n");
  testing::write_file(dir / "sub" / ".git" / "config", "hidden\n");
  testing::write_file(dir / ".hidden.txt", "hidden\n");
  testing::write_file(dir / "index.dat", "text but named .dat\n");
  testing::write_file(dir / "blob.bin", std::string("\x7f"
                                                    "ELF\0\0\0",
                                                    7));
  std::filesystem::create_symlink("b.txt", dir / "b.u8");
  EXPECT_EQ(find_text_files({dir.path()}), (std::vector<std::filesystem::path>{dir / "b.txt", dir / "sub/a.txt"}));
  // The same file named twice, directly and through the directory, is read once.
  EXPECT_EQ(find_text_files({dir / "b.txt", dir.path()}).size(), 2u);
}

TEST(FindTextFiles, ErrorsNameTheInput) {
  TempDir dir;
  try {
    find_text_files({dir / "nope"});
    ADD_FAILURE() << "a missing input was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "nope").string()), std::string::npos) << e.what();
  }
  testing::write_file(dir / "blob.bin", std::string("\0\0\0", 3));
  EXPECT_THROW(find_text_files({dir / "blob.bin"}), std::runtime_error);
  std::filesystem::create_directories(dir / "empty");
  EXPECT_THROW(find_text_files({dir / "empty"}), std::runtime_error);
}

}  // namespace
}  // namespace gradsweep::data
