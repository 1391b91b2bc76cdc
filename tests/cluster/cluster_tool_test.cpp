// gradsweep-cluster, the executable that carries the cluster commands and alone needs root (docs/cluster.md):
// it loads no LibTorch, MPI or yaml-cpp, `gradsweep cluster ...` becomes it (same output, same exit status),
// and a gradsweep without it beside says so. Needs neither root nor namespaces: a few seconds.
#include "support/test_files.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

fs::path cluster_tool() { return gradsweep_binary().parent_path() / "gradsweep-cluster"; }

// The shared libraries `binary` loads, as the dynamic linker resolves them (ldd), one per line.
std::string libraries_of(const fs::path& binary) {
  const CommandResult r = run_command("ldd " + binary.string() + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output;
}

TEST(ClusterTool, LoadsNoLibTorchMpiOrYaml) {
  ASSERT_TRUE(fs::exists(cluster_tool())) << cluster_tool() << " was not built beside gradsweep";
  // The same check on gradsweep itself finds LibTorch and MPI: the names looked for are the right ones.
  const std::string big = libraries_of(gradsweep_binary());
  ASSERT_NE(big.find("libtorch"), std::string::npos) << big;
  ASSERT_NE(big.find("libmpi"), std::string::npos) << big;
  const std::string small = libraries_of(cluster_tool());
  for (const char* forbidden : {"libtorch", "libc10", "libmpi", "libopen-pal", "libyaml-cpp", "libcuda", "libnccl"})
    EXPECT_EQ(small.find(forbidden), std::string::npos) << "gradsweep-cluster loads " << forbidden << ":\n" << small;
}

TEST(ClusterTool, GradsweepClusterIsForwardedWithItsOutputAndExitStatus) {
  const std::string gradsweep = gradsweep_binary().string();
  for (const std::string& args : {std::string("list"), std::string("down nosuch"), std::string("link nosuch 0 up")}) {
    const CommandResult via_gradsweep = run_command(gradsweep + " cluster " + args + " 2>&1");
    const CommandResult direct = run_command(cluster_tool().string() + " " + args + " 2>&1");
    EXPECT_EQ(via_gradsweep.exit_code, direct.exit_code) << args << ":\n" << via_gradsweep.output;
    EXPECT_EQ(via_gradsweep.output, direct.output) << args;
  }
  const CommandResult list = run_command(gradsweep + " cluster list 2>&1");
  EXPECT_EQ(list.exit_code, 0) << list.output;
  const CommandResult missing = run_command(gradsweep + " cluster down nosuch 2>&1");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("error: "), std::string::npos) << missing.output;
  // Mistakes in the arguments are gradsweep's to report, named as the user typed them.
  const CommandResult bad = run_command(gradsweep + " cluster up --nodes 2 2>&1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--link-bandwidth is required"), std::string::npos) << bad.output;
}

TEST(ClusterTool, WithoutGradsweepClusterBesideItGradsweepSaysWhereItLooked) {
  // gradsweep alone in a directory of its own (a hard link: /proc/self/exe names the directory it ran from).
  const fs::path dir = scratch_dir();
  const fs::path lonely = dir / "gradsweep";
  std::error_code ec;
  fs::create_hard_link(gradsweep_binary(), lonely, ec);
  if (ec) fs::copy_file(gradsweep_binary(), lonely);
  const CommandResult r = run_command(lonely.string() + " cluster list 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("error: the emulated cluster needs gradsweep-cluster beside " + lonely.string()),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find((dir / "gradsweep-cluster").string()), std::string::npos) << r.output;
  // Its help needs no gradsweep-cluster: the commands are defined in gradsweep too (and in docs/reference).
  const CommandResult help = run_command(lonely.string() + " cluster up --help 2>&1");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_NE(help.output.find("Usage: gradsweep cluster up"), std::string::npos) << help.output;
  EXPECT_EQ(help.output.find("--owner-lock"), std::string::npos) << "the sweep's options are hidden:\n" << help.output;
}

}  // namespace
}  // namespace gradsweep::test
