// The machine-wide half of a test's RESOURCE_LOCK (tests/CMakeLists.txt). ctest's RESOURCE_LOCK keeps two
// tests of one ctest run apart; two suites on one machine (two clones, a developer's run beside CI's) would
// still bring up their Slurm daemons or emulated clusters at once, and each breaks the other's. A test
// binary built with RESOURCE_LOCK NAME compiles this file with GRADSWEEP_TEST_MACHINE_LOCK="NAME": before
// its first test it takes an flock on /run/gradsweep/test-locks/NAME.lock, waiting while another process
// holds it, and holds it until it exits (the kernel releases it however the process ends).
//
// A gtest environment, not a static constructor: gtest sets environments up only when there are tests to
// run, so listing the tests (gtest_discover_tests at build time) never waits.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>

#ifndef GRADSWEEP_TEST_MACHINE_LOCK
#error "compiled only into tests with a RESOURCE_LOCK (gradsweep_add_test), which define its name"
#endif

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

// /run/gradsweep is where the emulated clusters keep their state (root); elsewhere the temporary directory.
fs::path lock_dir() {
  const char* override_dir = std::getenv("GRADSWEEP_TEST_LOCK_DIR");  // the lock's own test uses one of its own
  if (override_dir != nullptr && *override_dir != '\0') return override_dir;
  std::error_code ec;
  fs::create_directories("/run/gradsweep/test-locks", ec);
  if (!ec && ::access("/run/gradsweep/test-locks", W_OK) == 0) return "/run/gradsweep/test-locks";
  return fs::temp_directory_path() / "gradsweep-test-locks";
}

std::string read_holder(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "unknown";
}

constexpr const char* kHeldVariable = "GRADSWEEP_TEST_MACHINE_LOCK_HELD";

class MachineLock final : public ::testing::Environment {
 public:
  void SetUp() override {
    const fs::path dir = lock_dir();
    std::error_code ec;
    fs::create_directories(dir, ec);
    const fs::path path = dir / (std::string(GRADSWEEP_TEST_MACHINE_LOCK) + ".lock");
    // A test that runs a copy of its own binary (a child to interrupt) holds the lock for it: the child must
    // not wait for its parent. The holder names its lock file in the environment its children inherit.
    const char* held = std::getenv(kHeldVariable);
    if (held != nullptr && path.string() == held) return;
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) {
      std::cerr << "[machine lock] cannot open " << path << ": " << std::strerror(errno) << "; running unlocked\n";
      return;
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      std::cerr << "[machine lock] waiting for " << GRADSWEEP_TEST_MACHINE_LOCK << ": another test process on this "
                << "machine holds it (pid " << read_holder(fd_) << ", " << path.string() << ")" << std::endl;
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
    ::setenv(kHeldVariable, path.c_str(), 1);
    const std::string pid = std::to_string(::getpid());
    const bool noted = ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) > 0;
    (void)noted;  // the pid only names the holder to a process that waits; the lock holds without it
  }
  // The descriptor stays open: the lock is released when the process ends, after its last test's clean-up.

 private:
  int fd_ = -1;
};

[[maybe_unused]] ::testing::Environment* const kMachineLock = ::testing::AddGlobalTestEnvironment(new MachineLock);

}  // namespace
}  // namespace gradsweep::test
