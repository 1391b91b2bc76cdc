// The host reads the environment through one registry (host/env/environment.hpp): no other file in
// host/ calls getenv, every registered variable is in the generated docs/reference/environment.md, the
// defaults the registry states are the code's, and a bad value is refused naming the variable and the
// value, by the parsers the host's own call sites use.
#include "comm/algorithms/ring.hpp"
#include "comm/forensics/collective_forensics.hpp"
#include "comm/forensics/collective_timeout.hpp"
#include "env/environment.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace gradsweep {
namespace {
namespace fs = std::filesystem;

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(EnvironmentRegistry, NoOtherGetenvInHost) {
  const fs::path registry = test::source_dir() / "host" / "env" / "environment.cpp";
  std::string offenders;
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(test::source_dir() / "host")) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp") continue;
    ++files;
    if (entry.path() == registry) continue;
    if (read_text(entry.path()).find("getenv(") != std::string::npos) offenders += " " + entry.path().string();
  }
  EXPECT_GT(files, 100u) << "host/ not found under " << test::source_dir();
  EXPECT_EQ(offenders, "") << "getenv outside host/env/environment.cpp: read the variable through gradsweep::env";
  EXPECT_NE(read_text(registry).find("std::getenv"), std::string::npos);
}

TEST(EnvironmentRegistry, EveryVariableIsInTheReference) {
  // The page is generated from the registry (`gradsweep reference`); tests/host/reference_docs_test.cpp
  // checks that the copy in the tree is current.
  const std::string docs = read_text(test::source_dir() / "docs" / "reference" / "environment.md");
  ASSERT_FALSE(docs.empty())
      << "docs/reference/environment.md is missing: build/gradsweep reference --out docs/reference";
  ASSERT_FALSE(env::registry().empty());
  for (const env::Variable& v : env::registry())
    EXPECT_NE(docs.find(std::string("| `") + v.name + "` |"), std::string::npos)
        << v.name << " is in the registry but not in docs/reference/environment.md";
}

// The registry writes what unset means as text for the reference; where that is a number of the code's,
// it must be that number.
TEST(EnvironmentRegistry, RingDefaultsAreTheCodes) {
  const comm::ring::Tuning tuning;
  EXPECT_EQ(std::string(env::variable("GRADSWEEP_RING_SEGMENT_BYTES").default_value)
                .rfind(std::to_string(tuning.segment_bytes) + " ", 0),
            0u)
      << env::variable("GRADSWEEP_RING_SEGMENT_BYTES").default_value;
  EXPECT_EQ(std::string(env::variable("GRADSWEEP_RING_LOOKAHEAD").default_value), std::to_string(tuning.lookahead));
}

// Sets a variable for one test and restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string refusal(const std::function<void()>& read) {
  try {
    read();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(EnvironmentRegistry, BadValuesNameTheVariableAndTheValue) {
  {
    const ScopedEnv env("GRADSWEEP_RANKS_PER_NODE", "two");
    EXPECT_EQ(refusal([] { env::positive_integer("GRADSWEEP_RANKS_PER_NODE", 1 << 20); }),
              "GRADSWEEP_RANKS_PER_NODE='two': expected a positive integer");
  }
  {
    const ScopedEnv env("GRADSWEEP_COMM_TIMEOUT", "-1");
    EXPECT_EQ(refusal([] { comm::comm_timeout_seconds(600); }),
              "GRADSWEEP_COMM_TIMEOUT='-1': expected a number of seconds (0 turns the watchdog off)");
  }
  {
    const ScopedEnv env("GRADSWEEP_CHECK_COLLECTIVES", "yes");
    EXPECT_EQ(refusal([] { comm::forensics::check_collectives(); }),
              "GRADSWEEP_CHECK_COLLECTIVES='yes': expected 0 or 1");
  }
  {
    const ScopedEnv env("GRADSWEEP_RING_LOOKAHEAD", "0");
    EXPECT_EQ(refusal([] { env::positive_integer("GRADSWEEP_RING_LOOKAHEAD", 100); }),
              "GRADSWEEP_RING_LOOKAHEAD='0': expected a positive integer");
  }
}

TEST(EnvironmentRegistry, GoodValuesAndUnset) {
  {
    const ScopedEnv env("GRADSWEEP_COMM_TIMEOUT", "2.5");
    EXPECT_EQ(comm::comm_timeout_seconds(600), 2.5);
  }
  {
    const ScopedEnv env("GRADSWEEP_CHECK_COLLECTIVES", "true");
    EXPECT_TRUE(comm::forensics::check_collectives());
  }
  {
    const ScopedEnv env("GRADSWEEP_PLUGIN_PATH", ":/a::/b:");
    EXPECT_EQ(env::path_list("GRADSWEEP_PLUGIN_PATH"), (std::vector<std::string>{"/a", "/b"}));
  }
  {
    const ScopedEnv env("GRADSWEEP_RANKS_PER_NODE", "");  // empty is unset
    EXPECT_FALSE(env::positive_integer("GRADSWEEP_RANKS_PER_NODE", 1 << 20).has_value());
  }
  EXPECT_THROW(env::raw("GRADSWEEP_NOT_REGISTERED"), std::logic_error);
}

}  // namespace
}  // namespace gradsweep
