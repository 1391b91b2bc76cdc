// The emulated cluster for real: `gradsweep cluster` makes network namespaces, veths, a bridge and tc
// qdiscs on this machine, MPI jobs cross them, and nothing is left afterwards, also after SIGKILL. Needs
// root and `ip netns`; skips with the reason otherwise.
#include "support/skip_rule.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

extern char** environ;

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

std::string gradsweep() { return gradsweep_binary().string(); }

// Why this machine cannot run these tests, or "".
std::string missing_requirement() {
  if (::geteuid() != 0) return "not root: network namespaces need CAP_NET_ADMIN";
  const CommandResult r = run_command("ip netns list");
  if (r.exit_code != 0) return "`ip netns list` fails: " + r.output;
  if (run_command("tc -V").exit_code != 0) return "no `tc`";
  return "";
}

#define REQUIRE_NAMESPACES()                                                               \
  do {                                                                                     \
    const std::string why = missing_requirement();                                         \
    if (!why.empty()) GRADSWEEP_SKIP_UNLESS_CI_AS_ROOT("needs root and ip netns: " + why); \
  } while (0)

// Every object of cluster `name` still on the machine, one per line ("" when none is left).
std::string objects_of(const std::string& name) {
  const std::string prefix = "gsc-" + name + "-";
  std::string found;
  for (const char* cmd : {"ip netns list", "ip -o link show", "tc qdisc show"})
    for (const std::string& line : {run_command(cmd).output}) {
      std::istringstream in(line);
      std::string l;
      while (std::getline(in, l))
        if (l.find(prefix) != std::string::npos) found += std::string(cmd) + ": " + l + "\n";
    }
  if (read_text("/etc/hosts").find("gradsweep-cluster " + name + "\n") != std::string::npos)
    found += "/etc/hosts entry\n";
  if (fs::exists("/run/gradsweep/clusters/" + name)) found += "state directory\n";
  return found;
}

CommandResult up(const std::string& name, const std::string& extra) {
  return run_command(gradsweep() + " cluster up --name " + name + " " + extra);
}

pid_t spawn(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  EXPECT_EQ(::posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ), 0);
  return pid;
}

// Polls `condition` every 2 ms for up to `seconds`.
template <typename F>
bool wait_for(F condition, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return condition();
}

class Cluster : public ::testing::Test {
 protected:
  void SetUp() override { REQUIRE_NAMESPACES(); }
  void TearDown() override {
    for (const std::string& n : made_) run_command(gradsweep() + " cluster down " + n);
  }
  std::vector<std::string> made_;
};

TEST_F(Cluster, UpMakesShapedNodesAndDownLeavesNothing) {
  made_ = {"tud"};
  const CommandResult r = up("tud", "--nodes 3 --ranks-per-node 2 --link-bandwidth 200mbit");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string objects = objects_of("tud");
  for (const char* want : {"gsc-tud-n0", "gsc-tud-n2", "gsc-tud-br", "gsc-tud-v2", "/etc/hosts entry"})
    EXPECT_NE(objects.find(want), std::string::npos) << want << " missing in\n" << objects;
  // Both directions shaped: the bridge's end here, the node's end inside its namespace.
  EXPECT_NE(run_command("tc qdisc show dev gsc-tud-v1").output.find("rate 200Mbit"), std::string::npos);
  EXPECT_NE(run_command("ip netns exec gsc-tud-n1 tc qdisc show dev eth0").output.find("rate 200Mbit"),
            std::string::npos);
  EXPECT_EQ(read_text("/run/gradsweep/clusters/tud/hostfile"),
            "gsc-tud-n0 slots=2\ngsc-tud-n1 slots=2\ngsc-tud-n2 slots=2\n");
  const auto state = nlohmann::json::parse(read_text("/run/gradsweep/clusters/tud/cluster.json"));
  EXPECT_EQ(state["dilation"].get<double>(), 1.0);
  EXPECT_EQ(state["shaped_bits_per_second"].get<std::uint64_t>(), 200000000u);
  EXPECT_NE(run_command(gradsweep() + " cluster list").output.find("tud: 3 node(s) x 2 rank(s), link 200Mbit"),
            std::string::npos);

  const CommandResult again = up("tud", "--nodes 1 --link-bandwidth 1Gbit");
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.output.find("already up"), std::string::npos) << again.output;

  const CommandResult down = run_command(gradsweep() + " cluster down tud");
  EXPECT_EQ(down.exit_code, 0) << down.output;
  EXPECT_EQ(objects_of("tud"), "");
  const CommandResult twice = run_command(gradsweep() + " cluster down tud");
  EXPECT_NE(twice.exit_code, 0);
  EXPECT_NE(twice.output.find("there is no cluster 'tud'"), std::string::npos) << twice.output;
}

TEST_F(Cluster, TwoClustersAtOnceGetTheirOwnSubnetsAndDilationDividesTheRate) {
  made_ = {"ta", "tb"};
  ASSERT_EQ(up("ta", "--nodes 2 --link-bandwidth 1Gbit").exit_code, 0);
  ASSERT_EQ(up("tb", "--nodes 2 --link-bandwidth 1Gbit --dilation 4").exit_code, 0);
  const auto a = nlohmann::json::parse(read_text("/run/gradsweep/clusters/ta/cluster.json"));
  const auto b = nlohmann::json::parse(read_text("/run/gradsweep/clusters/tb/cluster.json"));
  EXPECT_NE(a["subnet"], b["subnet"]);
  EXPECT_EQ(b["dilation"].get<double>(), 4.0);
  EXPECT_NE(run_command("tc qdisc show dev gsc-tb-v0").output.find("rate 250Mbit"), std::string::npos);
  ASSERT_EQ(run_command(gradsweep() + " cluster down ta").exit_code, 0);
  EXPECT_EQ(objects_of("ta"), "");
  EXPECT_NE(objects_of("tb"), "") << "bringing ta down must not touch tb";
}

// --dilation auto: the factor is measured (2 nodes on this machine's cores: at least 1), recorded as measured,
// and the links are shaped at rate / F.
TEST_F(Cluster, MeasuredDilationIsRecordedAndShapesTheLinks) {
  made_ = {"tdil"};
  const CommandResult r = up("tdil", "--nodes 2 --link-bandwidth 1Gbit --dilation auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto state = nlohmann::json::parse(read_text("/run/gradsweep/clusters/tdil/cluster.json"));
  EXPECT_EQ(state["dilation_source"], "measured");
  const double f = state["dilation"].get<double>();
  EXPECT_GE(f, 1.0);
  const auto shaped = state["shaped_bits_per_second"].get<std::uint64_t>();
  EXPECT_NEAR(static_cast<double>(shaped), 1e9 / f, 1.0);
  // tc prints the rate it holds in its own units; read it back through tc's own parser of our figure.
  const std::string qdisc = run_command("tc qdisc show dev gsc-tdil-v0").output;
  EXPECT_NE(qdisc.find("tbf"), std::string::npos) << qdisc;
  if (f > 1.05) {
    EXPECT_EQ(qdisc.find("rate 1Gbit"), std::string::npos) << "dilated by " << f << " yet " << qdisc;
  }
}

// A 2-node job, one rank per node: the ranks are on different nodes (bench comm sees 1 rank on its node),
// and an allreduce of S bytes cannot beat the link. On 2 ranks any allreduce has every rank send at least
// S bytes in all (ring: S/2 in the reduce-scatter, S/2 in the allgather), so t >= 8 S / rate.
TEST_F(Cluster, AllreduceAcrossTwoNodesIsBoundByTheShapedLink) {
  made_ = {"tmpi"};
  ASSERT_EQ(up("tmpi", "--nodes 2 --link-bandwidth 100mbit").exit_code, 0);
  const fs::path json = scratch_dir() / "bench.json";
  const std::uint64_t S = 8ull << 20;
  const CommandResult r =
      run_command("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 120 " + gradsweep() +
                  " cluster exec tmpi -- mpirun -np 2 --bind-to none " + gradsweep() +
                  " bench comm --min-bytes 8MiB --max-bytes 8MiB --iters 2 --warmup 1 --json " + json.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("on 2 ranks (mpi, 1 on this node)"), std::string::npos) << r.output;
  const auto report = nlohmann::json::parse(read_text(json));
  const double bound_s = 8.0 * static_cast<double>(S) / 100e6;  // 0.671 s
  for (const char* algorithm : {"native", "ring"}) {
    const double t = report["results"][0][algorithm]["time_us"].get<double>() / 1e6;
    EXPECT_GE(t, 0.8 * bound_s) << algorithm << ": " << t << " s is faster than the 100mbit link allows";
    EXPECT_LT(t, 10 * bound_s) << algorithm << ": " << t << " s";
  }
  EXPECT_EQ(run_command("ip netns pids gsc-tmpi-n0").output, "") << "exec leaves no process on the nodes";
}

// Two ranks per node: the hostfile fills node 0 first, every node has its own host name (Open MPI names its
// shared-memory segments after it: with one name for all nodes, vader crashed), and ranks of one node
// share memory while the job still spans both nodes.
TEST_F(Cluster, RanksOfOneNodeShareItAndNodesHaveTheirOwnHostNames) {
  made_ = {"t22"};
  ASSERT_EQ(up("t22", "--nodes 2 --ranks-per-node 2 --link-bandwidth 1Gbit").exit_code, 0);
  const std::string exec = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 120 " + gradsweep() +
                           " cluster exec t22 -- mpirun -np 4 --bind-to none ";
  const CommandResult where = run_command(exec + "sh -c 'echo rank $OMPI_COMM_WORLD_RANK on $(hostname)'");
  ASSERT_EQ(where.exit_code, 0) << where.output;
  for (const char* line :
       {"rank 0 on gsc-t22-n0", "rank 1 on gsc-t22-n0", "rank 2 on gsc-t22-n1", "rank 3 on gsc-t22-n1"})
    EXPECT_NE(where.output.find(line), std::string::npos) << line << " in\n" << where.output;
  const CommandResult bench =
      run_command(exec + gradsweep() + " bench comm --min-bytes 1MiB --max-bytes 1MiB --iters 2 --warmup 1");
  ASSERT_EQ(bench.exit_code, 0) << bench.output;
  EXPECT_NE(bench.output.find("on 4 ranks (mpi, 2 on this node)"), std::string::npos) << bench.output;
}

TEST_F(Cluster, KilledUpLeavesLeftoversThatListCleanRemoves) {
  made_ = {"kup"};
  const pid_t pid =
      spawn({gradsweep(), "cluster", "up", "--name", "kup", "--nodes", "24", "--link-bandwidth", "1Gbit"});
  ASSERT_TRUE(wait_for([] { return fs::exists("/run/netns/gsc-kup-n1"); }, 20)) << "up made no node";
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_FALSE(fs::exists("/run/gradsweep/clusters/kup/cluster.json")) << "up finished before the kill: use more nodes";
  ASSERT_NE(objects_of("kup"), "");
  const CommandResult list = run_command(gradsweep() + " cluster list");
  EXPECT_NE(list.output.find("kup: leftovers"), std::string::npos) << list.output;
  const CommandResult clean = run_command(gradsweep() + " cluster list --clean");
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
  EXPECT_NE(clean.output.find("removed the leftovers of cluster kup"), std::string::npos) << clean.output;
  EXPECT_EQ(objects_of("kup"), "");
}

// A `down` killed midway leaves no cluster claiming to be up, only leftovers for the sweeper.
TEST_F(Cluster, KilledDownLeavesLeftoversThatListCleanRemoves) {
  made_ = {"kdn"};
  ASSERT_EQ(up("kdn", "--nodes 16 --link-bandwidth 1Gbit").exit_code, 0);
  const pid_t pid = spawn({gradsweep(), "cluster", "down", "kdn"});
  ASSERT_TRUE(wait_for([] { return !fs::exists("/run/netns/gsc-kdn-n0"); }, 20)) << "down removed no node";
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_NE(objects_of("kdn"), "") << "down finished before the kill: use more nodes";
  EXPECT_FALSE(fs::exists("/run/gradsweep/clusters/kdn/cluster.json"));
  EXPECT_NE(run_command(gradsweep() + " cluster list").output.find("kdn: leftovers"), std::string::npos);
  EXPECT_EQ(run_command(gradsweep() + " cluster list --clean").exit_code, 0);
  EXPECT_EQ(objects_of("kdn"), "");
}

TEST_F(Cluster, KilledUpIsSweptByTheNextUp) {
  made_ = {"kup2", "next"};
  const pid_t pid =
      spawn({gradsweep(), "cluster", "up", "--name", "kup2", "--nodes", "24", "--link-bandwidth", "1Gbit"});
  ASSERT_TRUE(wait_for([] { return fs::exists("/run/netns/gsc-kup2-n1"); }, 20));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_NE(objects_of("kup2"), "");
  ASSERT_EQ(up("next", "--nodes 1 --link-bandwidth 1Gbit").exit_code, 0);
  EXPECT_EQ(objects_of("kup2"), "");
}

// SIGKILL of `cluster exec` (no handler runs): mpirun gets SIGTERM from the kernel and takes its ranks down.
// SIGINT (Ctrl-C): passed on to mpirun. Either way no process stays inside the nodes.
TEST_F(Cluster, KilledOrInterruptedExecLeavesNoProcessOnTheNodes) {
  made_ = {"kex"};
  ASSERT_EQ(up("kex", "--nodes 2 --link-bandwidth 1Gbit").exit_code, 0);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  auto on_nodes = [] {
    return run_command("ip netns pids gsc-kex-n0").output + run_command("ip netns pids gsc-kex-n1").output;
  };
  for (int sig : {SIGKILL, SIGINT}) {
    const pid_t pid = spawn({gradsweep(), "cluster", "exec", "kex", "--", "mpirun", "-np", "2", "sleep", "120"});
    ASSERT_TRUE(wait_for(
        [&] {
          return on_nodes().find('\n') != std::string::npos && !run_command("ip netns pids gsc-kex-n1").output.empty();
        },
        30))
        << "the job never reached both nodes";
    ::kill(pid, sig);
    ::waitpid(pid, nullptr, 0);
    EXPECT_TRUE(wait_for([&] { return on_nodes().empty(); }, 20)) << "signal " << sig << " left: " << on_nodes();
  }
}

TEST_F(Cluster, RefusesBadInputAndMissingPrivilegesBeforeMakingAnything) {
  struct Case {
    std::string prefix, args, expected;
  };
  const std::vector<Case> cases = {
      {"", "--nodes 2 --link-bandwidth fast", "--link-bandwidth: 'fast' does not start with a number"},
      {"", "--nodes 2 --link-bandwidth 100MB/s", "bytes per second"},
      {"", "--nodes 0 --link-bandwidth 1Gbit", "--nodes: 0"},
      {"", "--nodes 2 --link-bandwidth 1Gbit --dilation 0.5", "--dilation"},
      // Root without the capabilities, and a real unprivileged user: both refused before anything is made.
      {"setpriv --bounding-set=-all --inh-caps=-all ", "--nodes 2 --link-bandwidth 1Gbit", "needs root"},
      {"setpriv --reuid=65534 --regid=65534 --clear-groups ", "--nodes 2 --link-bandwidth 1Gbit", "needs root"},
      {"env PATH=/nonexistent ", "--nodes 2 --link-bandwidth 1Gbit", "needs `ip` (iproute2) on PATH"},
  };
  const bool have_setpriv = run_command("setpriv --version").exit_code == 0;
  for (const Case& c : cases) {
    if (c.prefix.rfind("setpriv", 0) == 0 && !have_setpriv) {
      ADD_FAILURE() << "setpriv (util-linux) is missing: cannot check the refusal without privileges";
      continue;
    }
    const CommandResult r = run_command(c.prefix + gradsweep() + " cluster up --name bad " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.prefix << c.args << ": " << r.output;
    EXPECT_EQ(objects_of("bad"), "") << c.prefix << c.args;
  }
}

}  // namespace
}  // namespace gradsweep::test
