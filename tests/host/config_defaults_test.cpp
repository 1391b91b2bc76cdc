// Every default of a cell's host keys is written once, in the typed table (host/config/cell_keys.cpp): the
// struct it fills has no values of its own, no code reads a key with a fallback of its own, no page repeats a
// default beside its key, and the communicator's own default (which comm/ keeps, below config/) equals the
// table's.
#include "comm/forensics/collective_timeout.hpp"
#include "config/cell_keys.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;

std::string escaped(const std::string& text) {
  return std::regex_replace(text, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
}

// The files to search: host/'s code but the table, and docs/'s pages but the generated reference and the
// measurements (whose commands set values on purpose).
std::vector<fs::path> searched_files() {
  std::vector<fs::path> files;
  const fs::path root = test::source_dir();
  for (const auto& entry : fs::recursive_directory_iterator(root / "host")) {
    const auto ext = entry.path().extension();
    if ((ext == ".cpp" || ext == ".hpp") && entry.path().filename() != "cell_keys.cpp") files.push_back(entry.path());
  }
  for (const auto& entry : fs::recursive_directory_iterator(root / "docs")) {
    const std::string path = entry.path().string();
    if (entry.path().extension() == ".md" && path.find("/docs/reference/") == std::string::npos &&
        path.find("/docs/measurements/") == std::string::npos)
      files.push_back(entry.path());
  }
  return files;
}

// A line that reads the key with a fallback equal to its default (code), or names `section.key` with
// "default" and the value beside it (a page): a second home of the default.
TEST(ConfigDefaults, EachDefaultOfTheTableIsWrittenOnlyInTheTable) {
  const auto files = searched_files();
  ASSERT_GT(files.size(), 100u);
  std::vector<std::string> copies;
  std::size_t checked = 0;
  for (const auto& [section, keys] : config::cell_keys())
    for (const config::CellKey& k : keys) {
      const char* value = k.option.spec.default_value;
      if (value == nullptr || std::string(value).empty() || std::string(value) == "0") continue;  // too common to tell
      ++checked;
      const std::string key = k.option.spec.key, text = value;
      const std::string around = R"((^|[^0-9A-Za-z_.]))" + escaped(text) + R"(($|[^0-9A-Za-z_.]))";
      // Read with a fallback of its own: ("key", D), ["key"].as<T>(D), value("key", D).
      const std::regex in_code("\"" + key + R"("\s*(,|[)\]]\s*\.as<[^>]*>\()\s*"?)" + escaped(text) + R"("?\s*\))");
      const std::regex on_page("`?" + escaped(section + "." + key) + R"(`?[^|\n]{0,40}\bdefault\b[^|\n]{0,12})" +
                               around);
      for (const fs::path& file : files) {
        std::ifstream in(file);
        const bool page = file.extension() == ".md";
        int number = 0;
        for (std::string line; std::getline(in, line);) {
          ++number;
          if (std::regex_search(line, page ? on_page : in_code))
            copies.push_back(fs::relative(file, test::source_dir()).string() + ":" + std::to_string(number) + ": " +
                             section + "." + key + " = " + text + ": " + line);
        }
      }
    }
  EXPECT_GE(checked, 15u);
  std::string listed;
  for (const auto& c : copies) listed += c + "\n";
  EXPECT_TRUE(copies.empty()) << "defaults written outside host/config/cell_keys.cpp:\n" << listed;
}

// CellConfig and TrainSettings hold what the table fills: a value written in the struct would be a second default.
TEST(ConfigDefaults, TheCellStructsHoldNoValuesOfTheirOwn) {
  std::ifstream in(test::source_dir() / "host" / "config" / "cell_config.hpp");
  const std::regex initialised(R"(^\s+(std::\S+|double|bool|float|int)\s+\w+\s*(=\s*[^;{]+|\{[^}]+\});)");
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    EXPECT_FALSE(std::regex_search(line, initialised)) << "cell_config.hpp:" << number << ": " << line;
  }
}

TEST(ConfigDefaults, TheCommunicatorsOwnTimeoutIsTheTables) {
  int found = 0;
  for (const config::CellKey& k : config::cell_keys().at("runtime")) {
    if (std::string(k.option.spec.key) != "comm_timeout") continue;
    ++found;
    EXPECT_EQ(std::stod(k.option.spec.default_value), comm::kDefaultCommTimeoutSeconds);
  }
  EXPECT_EQ(found, 1);
}

// The table's types come from the fields they fill: a parsed cell carries every default into its struct.
TEST(ConfigDefaults, AParsedCellCarriesTheTablesDefaults) {
  const config::CellConfig c = config::parse_cell_config(
      "model: {name: gpt2}\ndata: {train: t.bin, val: v.bin}\ntrain: {steps: 3, batch_size: 4, seq_len: 8}\n",
      "cell.yaml", "/base");
  EXPECT_EQ(c.log_every, 10);
  EXPECT_EQ(c.train.seed, 1234);
  EXPECT_EQ(c.trace, "sampled");
  EXPECT_TRUE(c.tensorboard);
  EXPECT_FALSE(c.check_collectives);
  EXPECT_EQ(c.comm_timeout, 600);
  EXPECT_DOUBLE_EQ(c.train.optimizer.lr, 6e-4);
  EXPECT_DOUBLE_EQ(c.train.optimizer.momentum, 0.9);
  EXPECT_EQ(c.train.optimizer.kind, sdk::OptimizerSpec::Kind::AdamW);
}

}  // namespace
}  // namespace gradsweep
