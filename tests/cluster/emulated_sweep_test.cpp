// `gradsweep run` with launcher.name: emulated, for real: every cell on an emulated cluster of its own
// (network namespaces, shaped veths, Open MPI over TCP between them), the link rate as a matrix axis, the
// cluster's shape in summary.json and results.csv, nothing left behind after success, failure, Ctrl-C and
// SIGKILL (the cluster's supervisor removes it), and bad launcher keys refused with file:line:column before anything
// runs. Needs root and `ip netns`; skips with the reason otherwise.
#include "support/skip_rule.hpp"
#include "emulated_test_support.hpp"
#include "experiment/experiment_test_support.hpp"

#include "runs/cell_status.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;
using runs::CellState;

// The one cell directory of a sweep's output, once it exists.
fs::path only_cell(const fs::path& out) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out / "cells", ec)) return e.path();
  return {};
}

// True once the cell has saved a checkpoint: it is training (metrics.jsonl is written in blocks, so its
// lines come late) and a stop now leaves something to resume from.
bool checkpointed(const fs::path& cell) { return fs::exists(cell / "checkpoint"); }

class EmulatedSweep : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = missing_cluster_requirement();
    if (!why.empty()) GRADSWEEP_SKIP_UNLESS_CI_AS_ROOT("needs root and ip netns: " + why);
  }
};

TEST_F(EmulatedSweep, LinkRateAsAnAxisShowsInResultsAndTheSlowLinkBoundsTheStep) {
  const fs::path dir = scratch_dir();
  write_text(
      dir / "exp.yaml",
      tiny_experiment("launcher: {name: emulated, nodes: 2, ranks_per_node: 1, threads: 1, link: {bandwidth: 1Gbit}}\n"
                      "matrix: {strategy: [ring], link_bandwidth: [20mbit, 1Gbit]}\n",
                      6));
  const CommandResult r = run_sweep(dir / "exp.yaml", dir / "out");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const std::string csv = read_text(dir / "out" / "results.csv");
  const std::string header = csv.substr(0, csv.find('\n'));
  for (const char* column : {"link_bandwidth", "cluster.nodes", "cluster.ranks_per_node", "cluster.link_bandwidth",
                             "cluster.dilation", "cluster.shaped_bits_per_second"})
    EXPECT_NE(header.find(column), std::string::npos) << column << " missing in " << header;

  std::map<std::string, nlohmann::json> by_rate;
  for (const auto& e : fs::directory_iterator(dir / "out" / "cells")) {
    const nlohmann::json s = read_json(e.path() / "summary.json");
    ASSERT_TRUE(s.is_object() && s.contains("cluster")) << e.path();
    EXPECT_EQ(s["cluster"]["nodes"], 2);
    EXPECT_EQ(s["cluster"]["ranks_per_node"], 1);
    EXPECT_EQ(s["cluster"]["dilation"].get<double>(), 1.0);
    const nlohmann::json p = read_json(e.path() / "provenance.json");
    EXPECT_EQ(p["cluster"]["link_bandwidth"], s["cluster"]["link_bandwidth"]);
    EXPECT_EQ(objects_of(p["cluster"]["name"].get<std::string>()), "") << "cluster of " << e.path() << " left behind";
    EXPECT_NE(read_text(e.path() / "command.txt").find("--hostfile /run/gradsweep/clusters/"), std::string::npos);
    by_rate[s["cluster"]["link_bandwidth"].get<std::string>()] = s;
  }
  ASSERT_EQ(by_rate.size(), 2u) << csv;
  const nlohmann::json& slow = by_rate["20Mbit"];
  const nlohmann::json& fast = by_rate["1Gbit"];
  // Every byte rank 0 sends in a step leaves through its node's link shaped to 20 Mbit/s: a step cannot be
  // shorter than that (the 0.9 allows for the bucket's burst).
  const double bytes = slow["bytes_sent_per_step"].get<double>();
  ASSERT_GT(bytes, 100000.0) << slow.dump();
  EXPECT_GE(slow["step_time_s"].get<double>(), 0.9 * bytes * 8 / 20e6) << slow.dump();
  EXPECT_LT(slow["tokens_per_sec"].get<double>(), fast["tokens_per_sec"].get<double>());

  // Each node's link counted what crossed it (the bridge's veth counters): at least the bytes rank 0 sent in
  // its steps left through node 0's link and reached node 1, and at both rates the same training moved
  // about the same bytes (Ethernet and TCP headers, evaluation and start-up on top).
  for (const auto* s : {&slow, &fast}) {
    const nlohmann::json& links = (*s)["cluster"]["link_bytes"];
    ASSERT_EQ(links.size(), 2u) << s->dump();
    const double steps = (*s)["steps"].get<double>();
    EXPECT_GE(links[0]["from_node"].get<double>(), steps * (*s)["bytes_sent_per_step"].get<double>()) << links;
    EXPECT_GE(links[1]["to_node"].get<double>(), steps * (*s)["bytes_sent_per_step"].get<double>()) << links;
    EXPECT_LT(links[0]["from_node"].get<double>(), 4 * steps * (*s)["bytes_sent_per_step"].get<double>() + 4e6)
        << links;
    EXPECT_GT((*s)["cluster"]["link_bytes_per_node"].get<double>(), 0.0);
  }
  const double slow_bytes = slow["cluster"]["link_bytes_per_node"].get<double>();
  const double fast_bytes = fast["cluster"]["link_bytes_per_node"].get<double>();
  EXPECT_NEAR(slow_bytes / fast_bytes, 1.0, 0.25) << slow_bytes << " against " << fast_bytes;
  EXPECT_NE(header.find("cluster.link_bytes_per_node"), std::string::npos) << header;
}

TEST_F(EmulatedSweep, InterruptedAndKilledRunsLeaveNoClusterAndTheNextRunResumes) {
  const fs::path dir = scratch_dir();
  write_text(dir / "exp.yaml", tiny_experiment("checkpoint: {every: 2}\nmatrix: {strategy: [ring]}\n"
                                               "launcher: {name: emulated, nodes: 2, threads: 1, dilation: 2,\n"
                                               "           link: {bandwidth: 40mbit}}\n",
                                               60));
  std::vector<std::string> clusters;
  for (int sig : {SIGINT, SIGKILL}) {
    // The previous run's cluster and checkpoint are on disk: wait for this run's cluster.
    const fs::path log = dir / ("run-" + std::to_string(sig) + ".log");
    const pid_t pid = start_sweep(dir / "exp.yaml", dir / "out", log);
    fs::path cell;
    std::string name;
    // This run's cluster is up and its ranks are on node 1 (the provenance of a running cell has no end yet).
    ASSERT_TRUE(wait_for(
        [&] {
          cell = only_cell(dir / "out");
          const nlohmann::json p = read_json(cell / "provenance.json");
          if (cell.empty() || !p.is_object() || p.value("end", "x") != "" || !p.contains("cluster")) return false;
          name = p["cluster"].value("name", "");
          return checkpointed(cell) && !run_command("ip netns pids gsc-" + name + "-n1 2>/dev/null").output.empty();
        },
        90))
        << read_text(log);
    clusters.push_back(name);
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (sig == SIGINT) {
      EXPECT_EQ(WEXITSTATUS(status), 130) << read_text(log);
      EXPECT_EQ(runs::read_cell_status(cell).state, runs::CellState::Interrupted);
      EXPECT_EQ(objects_of(name), "") << "Ctrl-C left cluster " << name;
    } else {
      // No handler runs, but the cluster's supervisor sees its owner's lock released and removes it; its job
      // goes too (mpirun gets SIGTERM from the kernel), and so does the supervisor.
      EXPECT_TRUE(wait_for([&] { return objects_of(name).empty(); }, 30))
          << "SIGKILL left cluster " << name << ": " << objects_of(name);
      // [g]: the pattern does not match pgrep's own shell, whose command line holds it.
      EXPECT_TRUE(wait_for([&] { return run_command("pgrep -f '[g]radsweep-cluster up'").output.empty(); }, 30))
          << "the supervisor is still running: " << run_command("pgrep -af '[g]radsweep-cluster'").output;
    }
  }
  const CommandResult again = run_sweep(dir / "exp.yaml", dir / "out");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const fs::path cell = only_cell(dir / "out");
  EXPECT_EQ(runs::read_cell_status(cell).state, runs::CellState::Ok);
  EXPECT_NE(read_text(cell / "rank-0.log").find("resumed from"), std::string::npos);
  for (const std::string& name : clusters) EXPECT_EQ(objects_of(name), "") << "cluster " << name << " left behind";
  EXPECT_EQ(objects_of(cluster_of(cell)), "");
  const nlohmann::json s = read_json(cell / "summary.json");
  EXPECT_EQ(s["cluster"]["shaped_bits_per_second"], 20000000);  // 40 Mbit/s dilated by 2
}

TEST_F(EmulatedSweep, RankKilledMidStepFailsItsCellTearsItsClusterDownAndTheSweepGoesOn) {
  const fs::path dir = scratch_dir();
  // Both cells of one shape, the first long: its rank on node 1 is killed.
  write_text(dir / "exp.yaml",
             tiny_experiment("launcher: {name: emulated, nodes: 2, threads: 1, link: {bandwidth: 1Gbit}}\n"
                             "checkpoint: {every: 2}\nmatrix: {strategy: [ring], train.steps: [400, 3]}\n",
                             3));
  const pid_t pid = start_sweep(dir / "exp.yaml", dir / "out", dir / "out.log");
  fs::path cell;
  std::string name;
  ASSERT_TRUE(wait_for(
      [&] {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(dir / "out" / "cells", ec))
          if (checkpointed(e.path()) && !cluster_of(e.path()).empty() &&
              read_json(e.path() / "provenance.json")["end"] == "")
            cell = e.path();
        return !cell.empty();
      },
      90))
      << read_text(dir / "out.log");
  name = cluster_of(cell);
  const int killed = kill_ranks_in("gsc-" + name + "-n1");
  ASSERT_EQ(killed, 1) << "no rank found on node 1 of " << name;
  const auto killed_at = std::chrono::steady_clock::now();
  int status = 0;
  ::waitpid(pid, &status, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  const std::string log = read_text(dir / "out.log");
  EXPECT_EQ(WEXITSTATUS(status), 1) << log;
  EXPECT_NE(log.find("1 ok, 1 failed"), std::string::npos) << log;
  EXPECT_LT(seconds, 90) << log;
  EXPECT_EQ(runs::read_cell_status(cell).state, runs::CellState::Failed);
  EXPECT_EQ(objects_of(name), "") << "the failed cell's cluster was left";
}

TEST(EmulatedSweepInput, BadLauncherKeysAreRefusedWithTheirLocation) {
  const fs::path dir = scratch_dir();
  struct Case {
    std::string launcher, expected;
  };
  // The launcher line is line 7 of the file: tiny_experiment writes six.
  const std::vector<Case> cases = {
      {"launcher: {name: emulated, nodes: 2, link: {bandwidth: 1GB/s}}\n",
       "exp.yaml:7:56: launcher.link.bandwidth: '1GB/s' looks like bytes per second"},
      {"launcher: {name: emulated, nodes: 2, link: {bandwidth: 1Gbit}}\nmatrix: {link_bandwidth: [1Gbit, fast]}\n",
       "exp.yaml:8:34: launcher.link.bandwidth: 'fast' does not start with a number"},
      {"launcher: {name: emulated, nodes: 2}\n", "exp.yaml:7:11: launcher.link.bandwidth: an emulated cluster needs"},
      {"launcher: {name: emulated, nodes: 65, link: {bandwidth: 1Gbit}}\n",
       "exp.yaml:7:35: launcher.nodes: 65 nodes do not fit one emulated cluster (1 to 64)"},
      {"launcher: {name: emulated, nodes: 2, dilation: 0.5, link: {bandwidth: 1Gbit}}\n",
       "exp.yaml:7:48: launcher.dilation: '0.5' must be a number >= 1"},
      {"launcher: {name: cloud}\n", "exp.yaml:7:18: launcher.name: 'cloud' is not a launcher"},
      {"launcher: {nodes: 2, link: {bandwidth: 1Gbit}}\n", "exp.yaml:7:28: launcher.link: only an emulated cluster"},
      {"launcher: {name: emulated, link: {bandwitdh: 1Gbit}}\n", "launcher.link.bandwitdh: unknown key"},
  };
  for (const Case& c : cases) {
    const auto problems = plan_problems(dir, tiny_experiment(c.launcher + "include: [{strategy: ring}]\n"));
    std::string all;
    for (const auto& p : problems) all += p + "\n";
    EXPECT_TRUE(has_problem(problems, c.expected)) << c.launcher << "wanted: " << c.expected << "\ngot:\n" << all;
  }
}

TEST_F(EmulatedSweep, NoPrivilegesOrNoIpIsRefusedAtTheLauncherKeyBeforeAnythingRuns) {
  const fs::path dir = scratch_dir();
  write_text(
      dir / "exp.yaml",
      tiny_experiment("launcher: {name: emulated, nodes: 2, link: {bandwidth: 1Gbit}}\nmatrix: {strategy: [ring]}\n"));
  const std::string run = gradsweep("run " + (dir / "exp.yaml").string() + " --out " + (dir / "out").string());
  for (const auto& [prefix, expected] :
       std::vector<std::pair<std::string, std::string>>{{"setpriv --bounding-set=-all --inh-caps=-all ", "needs root"},
                                                        {"env PATH=/nonexistent ", "needs `ip` (iproute2) on PATH"}}) {
    const CommandResult r = run_command(prefix + run);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("exp.yaml:7:18: launcher.name: emulated " + expected), std::string::npos)
        << prefix << r.output;
    EXPECT_FALSE(fs::exists(dir / "out" / "cells")) << "a refused sweep made its cells";
  }
}

}  // namespace
}  // namespace gradsweep::test
