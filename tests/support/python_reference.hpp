#pragma once
// The Python packages the tests check gradsweep against (transformers, tokenizers, numpy, tensorboard,
// mlflow: scripts/requirements.txt). Where one is missing a test skips with the reason, except under CI
// (CI=true), which installs them all: there it fails.
#include "support/skip_rule.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace gradsweep::test {

// Why `python` cannot import `modules` ("numpy" or "tensorboard, numpy"), or "" when it can.
inline std::string python_lacks(const std::string& python, const std::string& modules) {
  if (run_command(python + " -c 'import " + modules + "' 2>&1").exit_code == 0) return "";
  return python + " cannot import " + modules + " (scripts/install-deps.sh installs it from scripts/requirements.txt)";
}

}  // namespace gradsweep::test

// Skips the test, or fails it under CI, when `python` lacks `modules`.
#define GRADSWEEP_REQUIRE_PYTHON(python, modules)                                 \
  do {                                                                            \
    const std::string why = ::gradsweep::test::python_lacks((python), (modules)); \
    if (!why.empty()) GRADSWEEP_SKIP_UNLESS_CI(why);                              \
  } while (0)
