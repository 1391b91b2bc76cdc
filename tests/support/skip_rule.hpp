#pragma once
// When a test may skip. Where the machine lacks what a test needs (a Python reference package, root,
// network namespaces, a local Slurm, a tmpfs mount) the test skips with the reason. CI (CI=true) installs
// every package and runs as root on a machine that has all the rest, so there a skip would only hide a
// broken set-up or a broken test: it fails instead, with the same reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace gradsweep::test {

inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

// Under CI as root, where root, namespaces, Slurm and mounts are all there to be used.
inline bool ci_as_root() { return in_ci() && ::geteuid() == 0; }

}  // namespace gradsweep::test

// In a test body (or SetUp): skip with `why`, or fail with it under CI. For what CI installs (packages,
// reference files).
#define GRADSWEEP_SKIP_UNLESS_CI(why)                                                            \
  do {                                                                                           \
    const std::string gradsweep_why_ = (why);                                                    \
    if (::gradsweep::test::in_ci()) FAIL() << "under CI this must not skip: " << gradsweep_why_; \
    GTEST_SKIP() << gradsweep_why_;                                                              \
  } while (0)

// The same for what needs root or a kernel feature (namespaces, mounts, Slurm's daemons): fails under CI
// only as root, so that a CI of one's own that runs unprivileged still passes.
#define GRADSWEEP_SKIP_UNLESS_CI_AS_ROOT(why)                                                                         \
  do {                                                                                                                \
    const std::string gradsweep_why_ = (why);                                                                         \
    if (::gradsweep::test::ci_as_root()) FAIL() << "CI runs as root and must not skip this test: " << gradsweep_why_; \
    GTEST_SKIP() << gradsweep_why_;                                                                                   \
  } while (0)
