// The machine-wide half of a test's RESOURCE_LOCK (tests/support/machine_lock.cpp), as two suites on one
// machine meet it: this binary is built with RESOURCE_LOCK machine_lock_probe. Two copies of it, started
// in a lock directory of their own (GRADSWEEP_TEST_LOCK_DIR), play the two suites: the first holds the lock
// through a test that lasts a few seconds, the second waits, naming the holder, and runs once it is gone. A
// copy that this process starts itself, in its own lock directory, does not wait for it.
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

constexpr double kHoldSeconds = 3.0;

// In a copy: "hold" keeps the lock for a while, "wait" ends at once (once it has the lock).
const char* role() { return std::getenv("GRADSWEEP_MACHINE_LOCK_ROLE"); }

TEST(MachineLock, SecondProcessWaitsForTheFirstAndRunsOnceItHasEnded) {
  if (role() != nullptr) {
    if (std::string(role()) == "hold") std::this_thread::sleep_for(std::chrono::duration<double>(kHoldSeconds));
    return;
  }
  const fs::path dir = scratch_dir();
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string copy = "GRADSWEEP_TEST_LOCK_DIR=" + dir.string() + " timeout 60 " + self +
                           " --gtest_filter=MachineLock.SecondProcessWaitsForTheFirstAndRunsOnceItHasEnded";
  auto first = std::async(std::launch::async, [&] { return run_command("GRADSWEEP_MACHINE_LOCK_ROLE=hold " + copy); });
  // The first holds the lock once it has written its pid into the lock file.
  const fs::path lock = dir / "machine_lock_probe.lock";
  std::string holder;
  for (int i = 0; i < 300 && holder.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (fs::exists(lock)) holder = read_text(lock);
  }
  ASSERT_FALSE(holder.empty()) << "the first copy never took the lock";
  const auto started = std::chrono::steady_clock::now();
  const CommandResult second = run_command("GRADSWEEP_MACHINE_LOCK_ROLE=wait " + copy);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const CommandResult held = first.get();
  EXPECT_EQ(held.exit_code, 0) << held.output;
  EXPECT_EQ(held.output.find("[machine lock] waiting"), std::string::npos) << held.output;
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("[machine lock] waiting for machine_lock_probe: another test process on this machine "
                               "holds it (pid " +
                               holder + ", " + lock.string() + ")"),
            std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("[  PASSED  ] 1 test"), std::string::npos) << second.output;
  // It ran only after the first had ended: the first held the lock for kHoldSeconds from about when its pid
  // appeared.
  EXPECT_GT(waited, kHoldSeconds / 2) << second.output;
}

// A test that runs a copy of its own binary (to interrupt it, say) holds the lock for it: the copy goes on at
// once instead of waiting for its own parent.
TEST(MachineLock, ACopyStartedByTheHolderDoesNotWaitForIt) {
  if (role() != nullptr) return;
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const CommandResult copy =
      run_command("GRADSWEEP_MACHINE_LOCK_ROLE=wait timeout 30 " + self +
                  " --gtest_filter=MachineLock.SecondProcessWaitsForTheFirstAndRunsOnceItHasEnded");
  EXPECT_EQ(copy.exit_code, 0) << copy.output;
  EXPECT_EQ(copy.output.find("[machine lock]"), std::string::npos) << copy.output;
  EXPECT_NE(copy.output.find("[  PASSED  ] 1 test"), std::string::npos) << copy.output;
}

// Listing the tests (what gtest_discover_tests does at build time) never waits, even while the lock is held:
// this process holds it now.
TEST(MachineLock, ListingTheTestsDoesNotWait) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const CommandResult listed = run_command("timeout 20 " + self + " --gtest_list_tests");
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_NE(listed.output.find("ListingTheTestsDoesNotWait"), std::string::npos) << listed.output;
  EXPECT_EQ(listed.output.find("[machine lock]"), std::string::npos) << listed.output;
}

}  // namespace
}  // namespace gradsweep::test
