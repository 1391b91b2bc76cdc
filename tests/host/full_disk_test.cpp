// A cell directory on a full disk, for real: a small tmpfs mounted as the output directory. Before the
// fix, a checkpoint that did not fit ended the process with "terminate called after throwing an instance
// of 'c10::Error'" (exit 134) from inside LibTorch's file writer.
#include "support/skip_rule.hpp"
#include "support/test_support.hpp"
#include "tiny_cell.hpp"

#include <gtest/gtest.h>

#include <sys/statvfs.h>
#include <unistd.h>

#include <fstream>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;

// A tmpfs of `size` mounted at `dir` for the life of the object; `skip_reason` says why not.
struct TmpfsMount {
  fs::path dir;
  std::string skip_reason;
  bool mounted = false;
  TmpfsMount(const fs::path& where, const std::string& size) : dir(where) {
    if (::geteuid() != 0) {
      skip_reason = "mounting a tmpfs needs root";
      return;
    }
    fs::create_directories(dir);
    const auto r = test::run_command("mount -t tmpfs -o size=" + size + " tmpfs " + dir.string());
    if (r.exit_code != 0) {
      skip_reason = "mount -t tmpfs failed (no CAP_SYS_ADMIN in this container?): " + r.output;
      return;
    }
    mounted = true;
  }
  ~TmpfsMount() {
    if (mounted && test::run_command("umount " + dir.string()).exit_code != 0)
      test::run_command("umount -l " + dir.string());
  }
};

// Fills the filesystem of `dir` so that about `leave` bytes stay free.
void fill_leaving(const fs::path& dir, std::uint64_t leave) {
  struct statvfs s {};
  ASSERT_EQ(::statvfs(dir.c_str(), &s), 0);
  const std::uint64_t free_bytes = static_cast<std::uint64_t>(s.f_bavail) * s.f_frsize;
  ASSERT_GT(free_bytes, leave);
  std::ofstream(dir / "filler", std::ios::binary) << std::string(free_bytes - leave, '\0');
}

// The cell: 12 steps, a checkpoint at step 10. gpt2-tiny's parameters alone take about 500 kB.
std::string train_on_full_disk(const fs::path& dir, const fs::path& out, int ranks) {
  const std::string strategy = ranks == 1 ? "single" : "ring";
  const fs::path cell = test::write_tiny_cell(dir, 12, "checkpoint: {every: 10}\nstrategy: {name: " + strategy + "}\n");
  const std::string train = test::gradsweep_command("train " + cell.string() + " --out " + out.string());
  return ranks == 1 ? train : test::mpirun(ranks, train, "", 120);
}

void expect_no_staging_left(const fs::path& out) {
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(out / "checkpoint", ec))
    EXPECT_EQ(entry.path().string().find("staging"), std::string::npos) << entry.path();
}

TEST(FullDisk, CheckpointThatDoesNotFitEndsWithNoSpaceLeft) {
  const fs::path dir = test::scratch_dir();
  TmpfsMount disk(dir / "disk", "3m");
  if (!disk.mounted) GRADSWEEP_SKIP_UNLESS_CI_AS_ROOT(disk.skip_reason);
  fill_leaving(disk.dir, 256 * 1024);  // room for the log and metrics, not for the checkpoint
  const fs::path out = disk.dir / "cell";
  const auto r = test::run_command(train_on_full_disk(dir, out, 1));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no space left writing checkpoint step-10 in " + (out / "checkpoint" / "rank-0").string()),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
  expect_no_staging_left(out);
}

TEST(FullDisk, TwoRankJobEndsWithTheMessageInsteadOfHanging) {
  const fs::path dir = test::scratch_dir();
  TmpfsMount disk(dir / "disk", "3m");
  if (!disk.mounted) GRADSWEEP_SKIP_UNLESS_CI_AS_ROOT(disk.skip_reason);
  fill_leaving(disk.dir, 256 * 1024);
  const fs::path out = disk.dir / "cell";
  const auto r = test::run_command(train_on_full_disk(dir, out, 2));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "the job hung:\n" << r.output;
  EXPECT_NE(r.output.find("no space left writing checkpoint step-10 in " + (out / "checkpoint").string() + "/rank-"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("ending all 2 ranks of the job"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
  expect_no_staging_left(out);
}

TEST(FullDisk, MetricsLineThatDoesNotFitEndsWithNoSpaceLeft) {
  // Before, std::ofstream dropped every line silently and the run "succeeded" with an empty metrics.jsonl.
  const fs::path dir = test::scratch_dir();
  TmpfsMount disk(dir / "disk", "3m");
  if (!disk.mounted) GRADSWEEP_SKIP_UNLESS_CI_AS_ROOT(disk.skip_reason);
  fill_leaving(disk.dir, 0);
  fs::create_directories(disk.dir / "cell");
  const auto r = test::run_command(train_on_full_disk(dir, disk.dir / "cell", 1));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no space left writing metrics.jsonl in " + (disk.dir / "cell").string()), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace gradsweep
