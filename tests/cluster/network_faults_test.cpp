// Faults on an emulated cluster's network, for real (`gradsweep cluster link`, docs/cluster.md): a node's link
// cut in the middle of a training job's allreduces ends the job within the collective deadline, with a
// verdict that names the collective and an mpirun that does not wait for the unreachable node; a link that
// comes back before the deadline leaves the job unharmed; a node whose link is 1/100 of the others is named
// by summary.json's link straggler. Needs root and `ip netns`; skips with the reason otherwise (fails under
// CI as root).
#include "emulated_test_support.hpp"
#include "support/skip_rule.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string gradsweep() { return gradsweep_binary().string(); }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A 4-rank training cell with the ring strategy: every step is an allreduce of the gradients (495 KiB)
// across all four nodes, so a cut link stalls the next one.
std::string cell(int steps, double comm_timeout) {
  const fs::path corpus = byte_corpus();
  return "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
         "strategy: {name: ring}\n"
         "data: {train: " +
         (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
         "}\n"
         "train: {steps: " +
         std::to_string(steps) +
         ", batch_size: 4, seq_len: 16, lr: 1e-3}\n"
         "eval: {batches: 1}\n"
         "metrics: {peak_flops: 1e11, log_every: 1, trace: off}\n"
         "runtime: {threads: 1, comm_timeout: " +
         std::to_string(comm_timeout) + "}\n";
}

// `gradsweep cluster exec NAME -- mpirun -np 4 gradsweep train CELL --out OUT` in the background.
pid_t start_job(const std::string& cluster, const fs::path& cell_file, const fs::path& out, const fs::path& log) {
  const std::string cmd = "exec env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 240 " +
                          gradsweep() + " cluster exec " + cluster + " -- mpirun -np 4 --bind-to none " + gradsweep() +
                          " train " + cell_file.string() + " --out " + out.string() + " >" + log.string() + " 2>&1";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    ::_exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The job has trained a step on every rank (metrics.jsonl is rank 0's; the others' logs say "step" only on
// rank 0, so a line of metrics after the first allreduces is the sign).
bool training(const fs::path& out) {
  std::error_code ec;
  return fs::exists(out / "metrics.jsonl") && fs::file_size(out / "metrics.jsonl", ec) > 0;
}

CommandResult link(const std::string& cluster, const std::string& args) {
  return run_command(gradsweep() + " cluster link " + cluster + " " + args);
}

class NetworkFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = missing_cluster_requirement();
    if (!why.empty()) GRADSWEEP_SKIP_UNLESS_CI_AS_ROOT("needs root and ip netns: " + why);
  }
  void TearDown() override {
    for (const std::string& n : made_) run_command(gradsweep() + " cluster down " + n);
  }
  void up(const std::string& name, int nodes, const std::string& rate) {
    made_.push_back(name);
    const CommandResult r = run_command(gradsweep() + " cluster up --name " + name + " --nodes " +
                                        std::to_string(nodes) + " --link-bandwidth " + rate);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  std::vector<std::string> made_;
};

// The verb's kernel effects and its refusals, without a job.
TEST_F(NetworkFaults, LinkVerbCutsRestoresAndReshapesANodeAndRefusesBadInput) {
  ASSERT_NO_FATAL_FAILURE(up("nfv", 3, "1Gbit"));
  CommandResult r = link("nfv", "2 down");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The switch port is dark: the node's eth0 has no carrier.
  EXPECT_NE(run_command("ip netns exec gsc-nfv-n2 ip link show eth0").output.find("NO-CARRIER"), std::string::npos);
  EXPECT_NE(run_command(gradsweep() + " cluster list").output.find("node 2 down"), std::string::npos);
  ASSERT_EQ(link("nfv", "2 up").exit_code, 0);
  EXPECT_TRUE(wait_for(
      [] {
        return run_command("ip netns exec gsc-nfv-n2 ip link show eth0").output.find("LOWER_UP") != std::string::npos;
      },
      5));
  EXPECT_EQ(run_command(gradsweep() + " cluster list").output.find("node 2"), std::string::npos);
  // The qdiscs outlived the cut.
  EXPECT_NE(run_command("tc qdisc show dev gsc-nfv-v2").output.find("rate 1Gbit"), std::string::npos);

  r = link("nfv", "1 shape 10Mbit");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(run_command("tc qdisc show dev gsc-nfv-v1").output.find("rate 10Mbit"), std::string::npos);
  EXPECT_NE(run_command("ip netns exec gsc-nfv-n1 tc qdisc show dev eth0").output.find("rate 10Mbit"),
            std::string::npos);
  EXPECT_NE(run_command("tc qdisc show dev gsc-nfv-v0").output.find("rate 1Gbit"), std::string::npos);
  const nlohmann::json state = read_json("/run/gradsweep/clusters/nfv/cluster.json");
  EXPECT_EQ(state["node_links"]["1"]["shaped_bits_per_second"], 10000000) << state.dump();

  struct Case {
    std::string args, expected;
  };
  for (const Case& c : std::vector<Case>{
           {"nfv 3 down", "node 3 is not a node of cluster 'nfv' (its nodes are 0 to 2)"},
           {"nfv -1 down", "its nodes are 0 to 2"},
           {"nfv 1 shape 10MB/s", "looks like bytes per second"},
           {"nfv 1 shape fast", "'fast' does not start with a number"},
           {"nfv 1 shape", "shape needs a RATE"},
           {"nfv 1 sideways", "'sideways' is not down, up or shape"},
           {"nope 1 down", "cluster 'nope' is not up"},
       }) {
    const CommandResult bad = run_command(gradsweep() + " cluster link " + c.args);
    EXPECT_NE(bad.exit_code, 0) << c.args;
    EXPECT_NE(bad.output.find(c.expected), std::string::npos) << c.args << ": " << bad.output;
  }
}

// Node 3's link cut while the ranks allreduce: the watchdog (runtime.comm_timeout 10 s) ends the job and the
// flight recorder's verdict names the collective. Without the stranded-job watch mpirun would then wait for
// node 3's orted until TCP gives up (measured: still there 150 s later), so the bound below fails if it broke.
TEST_F(NetworkFaults, LinkCutMidAllreduceEndsTheJobWithinTheDeadline) {
  ASSERT_NO_FATAL_FAILURE(up("nfcut", 4, "1Gbit"));
  const fs::path dir = scratch_dir();
  const double deadline = 10;
  write_text(dir / "cell.yaml", cell(100000, deadline));
  const pid_t pid = start_job("nfcut", dir / "cell.yaml", dir / "out", dir / "job.log");
  ASSERT_TRUE(wait_for([&] { return training(dir / "out"); }, 90)) << read_text(dir / "job.log");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const CommandResult cut = link("nfcut", "3 down");
  ASSERT_EQ(cut.exit_code, 0) << cut.output;
  const Clock::time_point cut_at = Clock::now();
  const int code = wait_exit(pid);
  const double took = seconds_since(cut_at);
  const std::string log = read_text(dir / "job.log");
  std::cout << "link cut -> job ended in " << took << " s (deadline " << deadline << " s)\n";
  EXPECT_NE(code, 0) << log;
  // The deadline, the verdict's wait for the ranks' dumps (5 s), the stranded-job grace (5 s), polling.
  EXPECT_LT(took, deadline + 20) << log;
  EXPECT_GE(took, deadline - 1) << "ended before the watchdog could have fired: " << log;
  EXPECT_NE(log.find("node 3's link is down"), std::string::npos) << log;
  const nlohmann::json verdict = read_json(dir / "out" / "flight-recorder" / "verdict.json");
  ASSERT_TRUE(verdict.is_object()) << log;
  EXPECT_EQ(verdict["kind"], "hang");
  const std::string summary = verdict["summary"].get<std::string>();
  // The ring allreduce, or the step report's allgather where a rank had finished the allreduce before the cut.
  EXPECT_TRUE(summary.find("allreduce") != std::string::npos || summary.find("allgather") != std::string::npos)
      << summary;
  EXPECT_NE(summary.find(" #"), std::string::npos) << summary;
  EXPECT_NE(log.find("has waited 10 s"), std::string::npos) << log;
  for (int n = 0; n < 4; ++n)
    EXPECT_EQ(run_command("ip netns pids gsc-nfcut-n" + std::to_string(n)).output, "") << "node " << n;
}

// A cut shorter than the deadline: TCP retransmits across it and the job finishes as if nothing happened.
TEST_F(NetworkFaults, LinkDownBrieflyLeavesTheJobToFinish) {
  ASSERT_NO_FATAL_FAILURE(up("nfblip", 4, "1Gbit"));
  const fs::path dir = scratch_dir();
  write_text(dir / "cell.yaml", cell(600, 20));  // trains for well over the 3 s the link is down
  const pid_t pid = start_job("nfblip", dir / "cell.yaml", dir / "out", dir / "job.log");
  ASSERT_TRUE(wait_for([&] { return training(dir / "out"); }, 90)) << read_text(dir / "job.log");
  ASSERT_EQ(link("nfblip", "3 down").exit_code, 0);
  const Clock::time_point cut_at = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_EQ(link("nfblip", "3 up").exit_code, 0);
  const int code = wait_exit(pid);
  const std::string log = read_text(dir / "job.log");
  EXPECT_EQ(code, 0) << log;
  EXPECT_FALSE(fs::exists(dir / "out" / "flight-recorder" / "verdict.json")) << log;
  const nlohmann::json summary = read_json(dir / "out" / "summary.json");
  ASSERT_TRUE(summary.is_object()) << log;
  // The job was still training when the link came back (else this test proves nothing).
  EXPECT_GT(seconds_since(cut_at), 4.0) << log;
}

// Node 3's link at 1/100 of the others': the ranks' work is even (its compute is not slower), so the work
// straggler cannot see it; the link probe must name it, and time it no faster than its link allows. Then
// node 1 instead (node 3 restored), so that naming the last node is not enough to pass.
TEST_F(NetworkFaults, SlowLinkIsNamedByTheLinkStraggler) {
  ASSERT_NO_FATAL_FAILURE(up("nfslow", 4, "1Gbit"));
  const fs::path dir = scratch_dir();
  write_text(dir / "cell.yaml", cell(4, 60));
  int restore = -1;
  for (const int slow : {3, 1}) {
    if (restore >= 0) {
      ASSERT_EQ(link("nfslow", std::to_string(restore) + " shape 1Gbit").exit_code, 0);
    }
    ASSERT_EQ(link("nfslow", std::to_string(slow) + " shape 10Mbit").exit_code, 0);
    restore = slow;
    const fs::path out = dir / ("out-" + std::to_string(slow));
    const pid_t pid = start_job("nfslow", dir / "cell.yaml", out, dir / "job.log");
    ASSERT_EQ(wait_exit(pid), 0) << read_text(dir / "job.log");
    const nlohmann::json summary = read_json(out / "summary.json");
    ASSERT_TRUE(summary.is_object());
    const nlohmann::json& b = summary["step_breakdown"];
    std::cout << "node " << slow << " slow: link straggler " << b["link_straggler_index"] << ", probe "
              << b["link_probe"].dump() << "\n";
    EXPECT_EQ(b["slow_link_rank"], slow) << b.dump();
    EXPECT_EQ(b["slow_link_host"], "gsc-nfslow-n" + std::to_string(slow)) << b.dump();
    ASSERT_TRUE(b["link_straggler_index"].is_number()) << b.dump();
    EXPECT_GT(b["link_straggler_index"].get<double>(), 10.0) << b.dump();
    // 256 KiB through a 10 Mbit/s bucket with 64 KiB of burst takes at least (256 - 64) KiB x 8 / 10 Mbit/s.
    const double bound = (b["link_probe"]["bytes"].get<double>() - 65536) * 8 / 10e6;
    EXPECT_GE(b["link_probe"]["by_node"]["seconds"][slow].get<double>(), 0.9 * bound) << b.dump();
  }
}

}  // namespace
}  // namespace gradsweep::test
