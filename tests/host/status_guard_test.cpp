// sdk::guard, in the SDK's core, reads no LibTorch type: it takes LibTorch's backtrace off an error's message
// by the text c10::Error::what() writes. Held here against the LibTorch gradsweep is built with.
#include <gradsweep/sdk/status.hpp>

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace gradsweep {
namespace {

void fail_a_torch_check() { TORCH_CHECK(false, "shape ", 3, " is not ", 4); }

TEST(StatusGuard, ALibTorchErrorCrossesAsItsMessageWithoutTheBacktrace) {
  std::string expected, what;
  try {
    fail_a_torch_check();
  } catch (const c10::Error& e) {
    expected = e.what_without_backtrace();
    what = e.what();
  }
  ASSERT_FALSE(expected.empty());
  const sdk::Status status = sdk::guard([] { fail_a_torch_check(); });
  EXPECT_FALSE(status.ok);
  EXPECT_EQ(status.message, expected) << "what() was:\n" << what;
  EXPECT_EQ(status.message.find("Exception raised from"), std::string::npos) << status.message;
}

TEST(StatusGuard, AnyOtherExceptionCrossesAsItsMessage) {
  const sdk::Status status = sdk::guard([] { throw std::runtime_error("line one\nline two"); });
  EXPECT_FALSE(status.ok);
  EXPECT_EQ(status.message, "line one\nline two");
  EXPECT_TRUE(sdk::guard([] {}).ok);
}

}  // namespace
}  // namespace gradsweep
