// Slurm across emulated nodes (slurm_multinode_cluster.hpp): srun --mpi=pmix jobs spanning 2 and 4 nodes,
// each task in its own node's namespace and MPI's traffic over the nodes' links; `gradsweep run --launcher
// slurm` with cells of 2 nodes x 1 rank, one run to the end and one requeued, cancelled and resumed; an elastic
// cell of 4 nodes that loses one and finishes on 3; a test process interrupted while its cluster runs a job
// leaves nothing behind.
#include "support/skip_rule.hpp"
#include "experiment/slurm_daemons.hpp"
#include "experiment/slurm_multinode_cluster.hpp"
#include "support/test_support.hpp"

#include "runs/cell_status.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// One task per node: each reports its rank, host name and addresses; every node answers once, under its own
// name and address. Then `gradsweep bench comm` as an MPI job of one rank per node: the ranks see one rank
// per host, and every node's link carries at least what an allreduce must send.
void expect_one_rank_per_node(int nodes) {
  SlurmMultinodeCluster& c = *slurm_multinode_cluster(nodes);
  const std::string n = std::to_string(nodes);
  // --quiet: srun's own notes ("job 305 queued and waiting for resources", while the last test's job still
  // releases its nodes) are not the tasks' lines.
  const CommandResult where = run_command("timeout 60 srun --quiet -N " + n + " -n " + n +
                                          " --ntasks-per-node=1 /bin/sh -c 'echo $SLURM_PROCID $(hostname) "
                                          "$(hostname -I)' 2>&1");
  ASSERT_EQ(where.exit_code, 0) << where.output << c.logs();
  std::set<std::string> seen;
  for (const std::string& line : lines_of(where.output)) seen.insert(line.substr(line.find(' ') + 1));
  std::set<std::string> expected;
  for (int i = 0; i < nodes; ++i) expected.insert(c.node(i) + " " + c.address(i));
  EXPECT_EQ(seen, expected) << where.output;

  constexpr std::uint64_t kBytes = 4u << 20;
  constexpr int kCalls = 4;  // 1 warm-up + 3 timed
  std::vector<std::uint64_t> before;
  for (int i = 0; i < nodes; ++i) before.push_back(c.bytes_sent_by(i));
  const CommandResult bench = run_command(
      "timeout 120 srun --mpi=pmix --kill-on-bad-exit=1 -N " + n + " -n " + n + " " + gradsweep_binary().string() +
      " bench comm --min-bytes 4MiB --max-bytes 4MiB --iters 3 --warmup 1 --algorithms native --threads 1 2>&1");
  ASSERT_EQ(bench.exit_code, 0) << bench.output << c.logs();
  EXPECT_NE(bench.output.find(n + " ranks (mpi, 1 on this node)"), std::string::npos) << bench.output;
  // An allreduce of S bytes on N ranks sends at least (N-1)/N x S from every rank, whatever its algorithm.
  for (int i = 0; i < nodes; ++i)
    EXPECT_GE(c.bytes_sent_by(i) - before[i], kCalls * kBytes * (nodes - 1) / nodes) << c.node(i) << "\n"
                                                                                     << bench.output;
}

TEST(SlurmMultinode, SrunPmixRunsOneRankOnEachOfTwoNodes) {
  GRADSWEEP_REQUIRE_SLURM_NODES(2);
  expect_one_rank_per_node(2);
}

TEST(SlurmMultinode, SrunPmixRunsOneRankOnEachOfFourNodes) {
  GRADSWEEP_REQUIRE_SLURM_NODES(4);
  expect_one_rank_per_node(4);
}

// A sweep of one ring cell on 2 nodes x 1 rank, `steps` steps, checkpoints every 2.
fs::path write_two_node_sweep(const fs::path& dir, int steps) {
  const fs::path corpus = byte_corpus();
  write_text(dir / "sweep.yaml",
             "name: slurm-two-nodes\n"
             "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
             "strategy: {name: ring}\n"
             "data: {train: " +
                 (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
                 "}\n"
                 "train: {steps: " +
                 std::to_string(steps) +
                 ", batch_size: 8, seq_len: 32, lr: 1e-3}\n"
                 "eval: {batches: 2}\n"
                 "checkpoint: {every: 2}\n"
                 "metrics: {peak_flops: 1e10}\n"
                 "launcher: {nodes: 2, ranks_per_node: 1, threads: 1, slurm: {time: '00:10:00'}}\n");
  return dir / "sweep.yaml";
}

std::string run_sweep(const fs::path& sweep, const fs::path& out, int timeout_s) {
  return "timeout " + std::to_string(timeout_s) + " " + gradsweep_binary().string() + " run " + sweep.string() +
         " --out " + out.string() + " --launcher slurm 2>&1";
}

fs::path only_cell(const fs::path& out) {
  std::vector<fs::path> cells;
  for (const auto& e : fs::directory_iterator(out / "cells")) cells.push_back(e.path());
  return cells.size() == 1 ? cells[0] : fs::path();
}

// The nodes Slurm gave the cell's job (its status.json names it; ended jobs stay visible: MinJobAge).
std::string job_nodes(const fs::path& cell) {
  const std::string job = nlohmann::json::parse(read_text(cell / "status.json")).value("job", "");
  std::smatch m;
  const std::string show = run_command("scontrol -o show job " + job + " 2>&1").output;
  return std::regex_search(show, m, std::regex(" NodeList=(\\S+)")) ? m[1].str() : show;
}

// Each rank of the cell ran alone on its node (rank-K.log: "(1 ranks on this node)"), as 2 ranks.
void expect_ranks_on_two_nodes(const fs::path& cell) {
  EXPECT_NE(read_text(cell / "summary.json").find("\"world_size\": 2"), std::string::npos)
      << read_text(cell / "summary.json");
  for (const char* log : {"rank-0.log", "rank-1.log"})
    EXPECT_NE(read_text(cell / log).find("(1 ranks on this node)"), std::string::npos)
        << log << ": " << read_text(cell / log);
}

TEST(SlurmMultinode, SweepCellOfTwoNodesRunsToOkWithARankOnEachNode) {
  GRADSWEEP_REQUIRE_SLURM_NODES(2);
  SlurmMultinodeCluster& c = *slurm_multinode_cluster(2);
  const fs::path dir = scratch_dir();
  const fs::path out = dir / "out";
  const std::uint64_t sent_before[] = {c.bytes_sent_by(0), c.bytes_sent_by(1)};
  const CommandResult r = run_command(run_sweep(write_two_node_sweep(dir, 6), out, 240));
  ASSERT_EQ(r.exit_code, 0) << r.output << c.logs();
  const fs::path cell = only_cell(out);
  ASSERT_FALSE(cell.empty()) << r.output;
  EXPECT_NE(read_text(cell / "status.json").find("\"state\": \"ok\""), std::string::npos)
      << read_text(cell / "status.json");
  expect_ranks_on_two_nodes(cell);
  EXPECT_EQ(job_nodes(cell), "gsc-" + c.spec().name + "-n[0-1]");
  // The batch script ran on the job's first node, and so did provenance.json's facts.
  const nlohmann::json provenance = nlohmann::json::parse(read_text(cell / "provenance.json"));
  EXPECT_EQ(provenance.value("host", ""), c.node(0)) << provenance.dump();
  // The ring's gradients crossed both links: each rank's bytes_sent, summed over the steps, left its node.
  std::uint64_t sent_per_rank = 0;
  std::ifstream metrics(cell / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);)
    sent_per_rank += nlohmann::json::parse(line).value("bytes_sent", std::uint64_t{0});
  EXPECT_GT(sent_per_rank, 0u);
  for (int i = 0; i < 2; ++i) EXPECT_GE(c.bytes_sent_by(i) - sent_before[i], sent_per_rank) << c.node(i);
}

// `gradsweep run` following its arrays on a thread of its own. Whatever fails in the test, the follower ends
// before the test does: the destructor cancels the jobs first.
class SweepInBackground {
 public:
  explicit SweepInBackground(const std::string& command)
      : thread_([this, command] { result_ = run_command(command); }) {}
  ~SweepInBackground() {
    if (!thread_.joinable()) return;
    run_command("scancel --user=root");
    thread_.join();
  }
  CommandResult join() {
    thread_.join();
    return result_;
  }

 private:
  CommandResult result_;
  std::thread thread_;
};

// Waits until the cell has written `steps` metrics lines while running; returns its Slurm job ("" if not).
std::string wait_for_progress(const fs::path& cell_dir_parent, std::size_t steps, fs::path* cell) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < until) {
    std::error_code ec;
    if (fs::exists(cell_dir_parent / "cells", ec) && !(*cell = only_cell(cell_dir_parent)).empty() &&
        fs::exists(*cell / "metrics.jsonl") && lines_of(read_text(*cell / "metrics.jsonl")).size() >= steps) {
      const std::string status = read_text(*cell / "status.json");
      std::smatch m;
      if (status.find("\"running\"") != std::string::npos &&
          std::regex_search(status, m, std::regex("\"job\": \"([0-9_]+)\"")))
        return m[1].str();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return "";
}

// Processes inside node i other than its slurmd (what a cancelled job left behind).
int processes_besides_slurmd(const SlurmMultinodeCluster& c, int i) {
  const std::string pids = run_command("ip netns pids " + c.node(i)).output;
  return static_cast<int>(lines_of(pids).size()) - 1;
}

// The steps a rank resumed from, one per resumed run ("resumed from .../checkpoint at step K"; the rank's
// log is appended to by every run of the cell).
std::vector<int> resumed_steps(const fs::path& rank_log) {
  const std::string log = read_text(rank_log);
  const std::regex resumed("resumed from .* at step ([0-9]+)");
  std::vector<int> steps;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), resumed); it != std::sregex_iterator(); ++it)
    steps.push_back(std::stoi((*it)[1]));
  return steps;
}

// True when both ranks of the cell have resumed `runs` times, each time from a step past 0.
bool both_ranks_resumed(const fs::path& cell, std::size_t runs) {
  for (const char* rank : {"rank-0.log", "rank-1.log"}) {
    const std::vector<int> steps = resumed_steps(cell / rank);
    if (steps.size() != runs || std::find(steps.begin(), steps.end(), 0) != steps.end()) return false;
  }
  return true;
}

// Waits until both ranks of the cell's requeued run have resumed; true if the run is still going then.
bool wait_for_resumed_run(const fs::path& cell) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < until) {
    if (both_ranks_resumed(cell, 1)) return read_text(cell / "status.json").find("\"running\"") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// The life of a 2-node cell under Slurm: requeued mid-way (`scontrol requeue`), its task runs again on both
// nodes and resumes from the checkpoint; then cancelled (`scancel`): interrupted, nothing left on its nodes;
// the next `gradsweep run` submits it again, it resumes once more and ends ok.
TEST(SlurmMultinode, RequeuedThenCancelledTwoNodeCellResumesEachTimeAndLeavesNothingOnItsNodes) {
  GRADSWEEP_REQUIRE_SLURM_NODES(2);
  SlurmMultinodeCluster& c = *slurm_multinode_cluster(2);
  const fs::path dir = scratch_dir();
  const fs::path out = dir / "out";
  const fs::path sweep = write_two_node_sweep(dir, 150);
  SweepInBackground follower(run_sweep(sweep, out, 240));
  fs::path cell;
  const std::string job = wait_for_progress(out, 8, &cell);
  ASSERT_FALSE(job.empty()) << "the cell did not start training: " << c.logs();

  const std::time_t requeued_at = std::time(nullptr);
  const CommandResult requeue = run_command("scontrol requeue " + job + " 2>&1");
  ASSERT_EQ(requeue.exit_code, 0) << requeue.output;
  release_requeued(job, requeued_at);
  ASSERT_TRUE(wait_for_resumed_run(cell)) << read_text(cell / "launcher.log") << read_text(cell / "status.json");
  EXPECT_NE(read_text(cell / "launcher.log").find("(restart 1) on " + c.node(0)), std::string::npos)
      << read_text(cell / "launcher.log");

  ASSERT_EQ(run_command("scancel " + job).exit_code, 0);
  const CommandResult first = follower.join();
  EXPECT_NE(first.exit_code, 0) << first.output;
  const nlohmann::json status = nlohmann::json::parse(read_text(cell / "status.json"));
  EXPECT_EQ(status.value("state", ""), "interrupted") << status.dump() << "\n" << first.output;
  EXPECT_NE(status.value("reason", "").find("CANCELLED"), std::string::npos) << status.dump();
  EXPECT_EQ(job_nodes(cell), "gsc-" + c.spec().name + "-n[0-1]");
  // Slurm took the ranks down on both nodes: only the slurmds are left there.
  for (int i = 0; i < 2; ++i) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (processes_besides_slurmd(c, i) > 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    EXPECT_EQ(processes_besides_slurmd(c, i), 0)
        << c.node(i) << ": " << run_command("ip netns pids " + c.node(i) + " | xargs -r ps -o pid,args -p").output;
  }

  const CommandResult second = run_command(run_sweep(sweep, out, 240));
  ASSERT_EQ(second.exit_code, 0) << second.output << read_text(cell / "launcher.log") << c.logs();
  EXPECT_NE(read_text(cell / "status.json").find("\"state\": \"ok\""), std::string::npos)
      << read_text(cell / "status.json");
  EXPECT_TRUE(both_ranks_resumed(cell, 2)) << read_text(cell / "rank-0.log") << read_text(cell / "rank-1.log");
  expect_ranks_on_two_nodes(cell);
  EXPECT_EQ(job_nodes(cell), "gsc-" + c.spec().name + "-n[0-1]");
}

// Two elastic ring cells of 4 nodes x 1 rank that may go on with 3, one after the other (max_concurrent: 1); they
// differ only in how often they checkpoint, so the first is the uninterrupted reference of the second. 12
// sequences a step split over 4 and over 3 ranks alike.
fs::path write_elastic_sweep(const fs::path& dir) {
  const fs::path corpus = byte_corpus();
  write_text(dir / "sweep.yaml",
             "name: slurm-elastic\n"
             "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
             "strategy: {name: ring}\n"
             "data: {train: " +
                 (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
                 "}\n"
                 "train: {steps: 300, batch_size: 12, seq_len: 16, lr: 1e-3}\n"
                 "eval: {batches: 2}\n"
                 "metrics: {peak_flops: 1e10}\n"
                 "launcher: {nodes: 4, ranks_per_node: 1, threads: 1, elastic: {min_nodes: 3},\n"
                 "           slurm: {time: '00:10:00', max_concurrent: 1}}\n"
                 "matrix: {checkpoint.every: [10, 12]}\n");
  return dir / "sweep.yaml";
}

// The cell that array task 1 runs, once it is running with a checkpoint to resume from and has not finished.
fs::path second_cell_running(const fs::path& out) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out / "cells", ec)) {
    const std::string status = read_text(e.path() / "status.json");
    if (std::regex_search(status, std::regex("\"job\": \"[0-9]+_1\"")) &&
        status.find("\"running\"") != std::string::npos && fs::exists(e.path() / "checkpoint") &&
        !fs::exists(e.path() / "summary.json"))
      return e.path();
  }
  return {};
}

// An elastic cell under Slurm (experiment/slurm/elastic_runs.hpp) loses node 3 for good mid-run: every process
// in the node is killed, its slurmd with them, and Slurm marks it down (what slurmctld does once the node stops
// answering, SlurmdTimeout). Slurm requeues the task (--requeue) and, since the array asks for 3-4 nodes, starts
// it again on the three left; `gradsweep train` resumes the checkpoint at 3 ranks and the cell ends ok with the
// loss of the uninterrupted cell. The change of size is in status.json, provenance.json, summary.json and
// results.csv.
TEST(SlurmMultinode, ElasticCellThatLosesANodeIsRequeuedOnTheThreeLeftAndFinishes) {
  GRADSWEEP_REQUIRE_SLURM_NODES(4);
  SlurmMultinodeCluster& c = *slurm_multinode_cluster(4);
  const fs::path dir = scratch_dir();
  const fs::path out = dir / "out";
  const fs::path sweep = write_elastic_sweep(dir);
  SweepInBackground follower(run_sweep(sweep, out, 420));

  fs::path cell;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while ((cell = second_cell_running(out)).empty() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_FALSE(cell.empty()) << "the second cell did not start training: " << c.logs();
  const std::string job = nlohmann::json::parse(read_text(cell / "status.json")).value("job", "");
  EXPECT_EQ(job_nodes(cell), "gsc-" + c.spec().name + "-n[0-3]") << "an elastic array first gets all its nodes";

  const std::time_t lost_at = std::time(nullptr);
  EXPECT_GT(processes_besides_slurmd(c, 3), 0) << "no rank on node 3";
  run_command("ip netns pids " + c.node(3) + " | xargs -r kill -9");
  ASSERT_EQ(run_command("scontrol update NodeName=" + c.node(3) + " State=DOWN Reason=lost-in-test").exit_code, 0);
  release_requeued(job, lost_at);
  const CommandResult sweep_run = follower.join();
  ASSERT_EQ(sweep_run.exit_code, 0) << sweep_run.output << read_text(cell / "launcher.log") << c.logs();
  EXPECT_EQ(job_nodes(cell), "gsc-" + c.spec().name + "-n[0-2]");

  const runs::CellStatus status = runs::read_cell_status(cell);
  EXPECT_EQ(status.state, runs::CellState::Ok) << status.reason;
  ASSERT_EQ(status.resizes.size(), 1u) << read_text(cell / "status.json");
  EXPECT_EQ(status.resizes[0].from_nodes, 4);
  EXPECT_EQ(status.resizes[0].to_nodes, 3);
  EXPECT_EQ(status.resizes[0].lost_nodes, std::vector<int>{3});
  EXPECT_NE(status.resizes[0].why.find("(restart 1) was given 3 of 4 nodes (--nodes=3-4); not " + c.node(3)),
            std::string::npos)
      << status.resizes[0].why;
  const nlohmann::json s = nlohmann::json::parse(read_text(cell / "summary.json"));
  EXPECT_EQ(s["world_size"], 3);
  EXPECT_EQ(s["resharded"]["from_world_size"], 4) << s.dump();
  EXPECT_EQ(s["elastic"]["resized"], "4->3 nodes") << s.dump();
  EXPECT_NE(read_text(cell / "rank-0.log").find("resharded from 4 ranks to 3"), std::string::npos);

  // The other cell ran first, on all four nodes, without a fault: the reference. An exact strategy resharded at
  // the same global batch continues the uninterrupted run.
  fs::path reference;
  for (const auto& e : fs::directory_iterator(out / "cells"))
    if (e.path() != cell) reference = e.path();
  const nlohmann::json r = nlohmann::json::parse(read_text(reference / "summary.json"));
  EXPECT_EQ(r["world_size"], 4);
  EXPECT_EQ(r["elastic"]["resized"], "") << r.dump();
  const double loss = s["val_loss"].get<double>(), uninterrupted = r["val_loss"].get<double>();
  EXPECT_LT(std::abs(loss - uninterrupted) / uninterrupted, 1e-4) << loss << " vs " << uninterrupted;
  EXPECT_NE(read_text(out / "results.csv").find(",ok,,4->3 nodes,"), std::string::npos)
      << read_text(out / "results.csv");
}

// A process that exists and is not a zombie (a killed daemon waits for init to reap it).
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t paren = text.rfind(") ");
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

// How many of the job's ranks below run (pgrep counts).
constexpr const char* kSleepers = "pgrep -c -f '^[a-z/]*sleep 4321$'";

// Not run by itself (DISABLED_): the test process that the next test interrupts. It brings up a 2-node Slurm,
// starts a job on both nodes, says where everything is, and waits to be killed.
TEST(SlurmMultinode, DISABLED_HoldsATwoNodeClusterWithAJobUntilInterrupted) {
  GRADSWEEP_REQUIRE_SLURM_NODES(2);
  SlurmMultinodeCluster& c = *slurm_multinode_cluster(2);
  const CommandResult job = run_command("sbatch -N 2 --ntasks-per-node=1 -o /dev/null --wrap 'srun sleep 4321' 2>&1");
  ASSERT_EQ(job.exit_code, 0) << job.output;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  // srun runs the command by its full path: "/usr/bin/sleep 4321" on each node (not the batch step's srun).
  while (run_command(kSleepers).output != "2\n" && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(run_command(kSleepers).output, "2\n") << "the job did not start on both nodes\n" << c.logs();
  std::cout << "READY " << ::getpid() << " " << c.spec().name << " " << c.dir().string();
  const std::vector<std::string> pid_files = {"slurmctld.pid", "munge/munged.pid", "slurmd-" + c.node(0) + ".pid",
                                              "slurmd-" + c.node(1) + ".pid"};
  for (const std::string& file : pid_files) std::cout << " " << std::stol("0" + read_text(c.dir() / file));
  std::cout << std::endl;
  std::this_thread::sleep_for(std::chrono::seconds(120));
}

// Ctrl-C of a test (SIGINT to the test process, no destructor runs): the cluster's watchdog stops the
// daemons and brings the emulated cluster down, with the job's processes in it.
TEST(SlurmMultinode, InterruptedTestProcessLeavesNoDaemonNamespaceJobOrDirectory) {
  if (const std::string reason = SlurmMultinodeCluster::unavailable_reason(); !reason.empty())
    GRADSWEEP_SKIP_UNLESS_CI_AS_ROOT("multi-node Slurm tests skipped: " + reason);
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  FILE* child =
      ::popen(("exec " + self + " --gtest_also_run_disabled_tests --gtest_filter='SlurmMultinode.DISABLED_Holds*' 2>&1")
                  .c_str(),
              "r");
  ASSERT_NE(child, nullptr);
  std::string output, ready;
  char line[4096];
  while (ready.empty() && std::fgets(line, sizeof line, child) != nullptr) {
    output += line;
    if (std::string(line).rfind("READY ", 0) == 0) ready = line;
  }
  std::istringstream fields(ready.substr(6));
  pid_t pid = 0;
  std::string name, dir;
  fields >> pid >> name >> dir;
  std::vector<pid_t> daemons;  // slurmctld, munged, the two slurmds
  for (pid_t daemon = 0; fields >> daemon;) daemons.push_back(daemon);
  if (pid > 0) ::kill(pid, SIGINT);
  while (std::fgets(line, sizeof line, child) != nullptr) output += line;
  ::pclose(child);
  ASSERT_GT(pid, 0) << output;

  EXPECT_EQ(daemons.size(), 4u) << ready;
  auto left = [&] {
    std::string found;
    if (fs::exists(dir)) found += "directory " + dir + "\n";
    if (fs::exists("/run/gradsweep/clusters/" + name)) found += "cluster state of " + name + "\n";
    found += run_command("ip netns list | grep '^gsc-" + name + "-'").output;
    found += run_command(std::string(kSleepers) + " | sed 's/^/ranks of the job: /' | grep -v ': 0$'").output;
    for (const pid_t daemon : daemons)
      if (daemon > 1 && running(daemon)) found += "daemon " + std::to_string(daemon) + "\n";
    return found;
  };
  const auto killed = std::chrono::steady_clock::now();
  while (!left().empty() && std::chrono::steady_clock::now() < killed + std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(left(), "") << output;
  std::cout << "everything gone " << std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count()
            << " s after SIGINT\n";
}

}  // namespace
}  // namespace gradsweep::test
