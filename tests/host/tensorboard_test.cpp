// TensorBoard event files beside metrics.jsonl, read back by TensorBoard's own reader (its
// EventAccumulator and hparams plugin metadata, tests/host/tensorboard_read.py): real `gradsweep train`
// and `gradsweep run` jobs, a cell killed mid-run, and a TensorBoard directory that cannot be written.
#include "host/tiny_cell.hpp"
#include "support/python_reference.hpp"

#include <tensorboard/record_writer.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace gradsweep {
namespace {
namespace fs = std::filesystem;

const char* kRootEnv = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ";

#define REQUIRE_TENSORBOARD() GRADSWEEP_REQUIRE_PYTHON(GRADSWEEP_TEST_PYTHON, "tensorboard, numpy")

// tensorboard_read.py's JSON for `mode` ("cell" or "experiment") on `dir`.
nlohmann::json read_back(const std::string& mode, const fs::path& dir) {
  const fs::path script = test::source_dir() / "tests" / "host" / "tensorboard_read.py";
  const test::CommandResult r = test::run_command(std::string(GRADSWEEP_TEST_PYTHON) + " " + script.string() + " " +
                                                  mode + " " + dir.string() + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto start = r.output.rfind("\n{");
  try {
    return nlohmann::json::parse(start == std::string::npos ? r.output : r.output.substr(start + 1));
  } catch (const std::exception&) {
    ADD_FAILURE() << "tensorboard_read.py printed no JSON:\n" << r.output;
    return nlohmann::json::object();
  }
}

test::CommandResult train(const fs::path& cell, const fs::path& out) {
  return test::run_command(test::gradsweep_command("train " + cell.string() + " --out " + out.string() + " 2>&1"));
}

std::size_t line_count(const fs::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

TEST(TensorBoard, EveryMetricOfEveryStepReadsBackEqualWithTheCellsHParams) {
  REQUIRE_TENSORBOARD();
  const fs::path dir = test::scratch_dir("tb-train");
  const fs::path cell = test::write_tiny_cell(dir, 6);
  std::string text = test::read_text(cell);
  text.replace(text.find("eval: {batches: 2}"), 18, "eval: {every: 2, batches: 1}");
  test::write_text(cell, text);
  const auto r = train(cell, dir / "out");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json got = read_back("cell", dir / "out");
  EXPECT_EQ(got["metrics_lines"], 6);
  EXPECT_EQ(got["steps_read"], 6);
  EXPECT_GT(got["compared"].get<int>(), 6 * 20) << got.dump(2);  // loss, lr, times, bytes, comm, memory, ...
  EXPECT_TRUE(got["problems"].empty()) << got["problems"].dump(2);
  EXPECT_EQ(got["val_loss_steps"], nlohmann::json::array({1, 3, 5}));
  EXPECT_EQ(got["hparams"]["strategy"], "single") << got.dump(2);
  EXPECT_EQ(got["hparams"]["model"], "gpt2");
  EXPECT_EQ(got["hparams"]["train.steps"], 6.0);
  EXPECT_EQ(got["hparams"]["world_size"], 1.0);
  EXPECT_EQ(got["session_end"], "STATUS_SUCCESS");
}

TEST(TensorBoard, OffWhenTheCellSaysSo) {
  const fs::path dir = test::scratch_dir("tb-off");
  const fs::path cell = test::write_tiny_cell(dir, 2, "metrics: {tensorboard: false}\n");
  const auto r = train(cell, dir / "out");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "tensorboard"));
  EXPECT_EQ(line_count(dir / "out" / "metrics.jsonl"), 2u);
}

TEST(TensorBoard, SweepExperimentListsTheAxisWithBothValuesAndEachCellItsOwn) {
  REQUIRE_TENSORBOARD();
  const fs::path dir = test::scratch_dir("tb-sweep");
  const fs::path corpus = test::byte_corpus();
  test::write_text(dir / "exp.yaml",
                   "name: tb\nmodel: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
                   "strategy: {name: single}\ndata: {train: " +
                       (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
                       "}\ntrain: {steps: 3, batch_size: 4, seq_len: 16, lr: 1e-3}\neval: {batches: 1}\n"
                       "metrics: {peak_flops: 1e11}\nlauncher: {threads: 1}\nmatrix: {train.lr: [1e-3, 3e-3]}\n");
  const auto r =
      test::run_command(std::string(kRootEnv) + test::gradsweep_command("run " + (dir / "exp.yaml").string() +
                                                                        " --out " + (dir / "out").string() + " 2>&1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json exp = read_back("experiment", dir / "out");
  EXPECT_EQ(exp["hparams"]["train.lr"], nlohmann::json::array({1e-3, 3e-3})) << exp.dump(2);
  EXPECT_EQ(exp["types"]["train.lr"], "DATA_TYPE_FLOAT64");
  EXPECT_NE(std::find(exp["metrics"].begin(), exp["metrics"].end(), "val/loss"), exp["metrics"].end());
  std::vector<double> cell_lrs;
  for (const auto& e : fs::directory_iterator(dir / "out" / "cells")) {
    const nlohmann::json got = read_back("cell", e.path());
    EXPECT_TRUE(got["problems"].empty()) << got["problems"].dump(2);
    EXPECT_EQ(got["steps_read"], 3);
    ASSERT_TRUE(got["hparams"].contains("train.lr")) << got.dump(2);
    cell_lrs.push_back(got["hparams"]["train.lr"].get<double>());
  }
  std::sort(cell_lrs.begin(), cell_lrs.end());
  EXPECT_EQ(cell_lrs, (std::vector<double>{1e-3, 3e-3}));
}

TEST(TensorBoard, ACellKilledMidRunLeavesEventsReadableUpToItsLastStep) {
  REQUIRE_TENSORBOARD();
  const fs::path dir = test::scratch_dir("tb-killed");
  const fs::path cell = test::write_tiny_cell(dir, 100000);
  const fs::path out = dir / "out";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string cmd = test::gradsweep_command("train " + cell.string() + " --out " + out.string());
    ::execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >" + (dir / "train.log").string() + " 2>&1").c_str(), nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 600 && line_count(out / "metrics.jsonl") < 5; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const std::size_t lines = line_count(out / "metrics.jsonl");
  ASSERT_GE(lines, 5u) << test::read_text(dir / "train.log");
  const nlohmann::json got = read_back("cell", out);
  // The kill may fall between a step's metrics.jsonl line and its event: at most that one is missing.
  EXPECT_GE(got["steps_read"].get<std::size_t>() + 1, lines) << got.dump(2);
  EXPECT_TRUE(got["problems"].empty()) << got["problems"].dump(2);
  EXPECT_EQ(got["hparams"]["strategy"], "single");
  EXPECT_TRUE(got["session_end"].is_null());
}

TEST(TensorBoard, AnUnwritableDirectoryWarnsNamingItAndTrainingGoesOn) {
  const fs::path dir = test::scratch_dir("tb-unwritable");
  const fs::path cell = test::write_tiny_cell(dir, 3);
  fs::create_directories(dir / "out");
  test::write_text(dir / "out" / "tensorboard", "a file where the directory should be\n");
  const auto r = train(cell, dir / "out");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no TensorBoard output for this cell"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find((dir / "out" / "tensorboard").string()), std::string::npos) << r.output;
  EXPECT_EQ(line_count(dir / "out" / "metrics.jsonl"), 3u);
  EXPECT_TRUE(fs::exists(dir / "out" / "summary.json"));
}

// A full disk (/dev/full) under the writer: the error names the file and says the disk is full.
TEST(TensorBoard, RecordWriterNamesAFullDisk) {
  tensorboard::RecordWriter writer("/dev/full");
  try {
    writer.write(std::string(100000, 'x'));
    FAIL() << "writing to /dev/full succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no space left writing /dev/full"), std::string::npos) << e.what();
  }
}

// The TFRecord framing of a known record: CRC32C's check value ("123456789" -> 0xe3069283), masked.
TEST(TensorBoard, RecordFramingUsesMaskedCrc32c) {
  const std::uint32_t crc = 0xe3069283u;
  EXPECT_EQ(tensorboard::masked_crc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  const std::string record = tensorboard::frame_record("abc");
  ASSERT_EQ(record.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(record[0], 3);
  EXPECT_EQ(record.substr(12, 3), "abc");
}

}  // namespace
}  // namespace gradsweep
