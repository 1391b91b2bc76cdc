#pragma once
// Errors cross the plugin boundary as values, never as exceptions.
//
// A plugin may be built by another team, at another time, with other flags. An exception thrown in one
// shared object and caught in another only works when both agree on every type involved, so every call
// that crosses the boundary is `noexcept` and returns a Status. Inside a plugin (or inside the host)
// code throws as usual; `guard` turns the exception into a Status at the edge and `check` turns it back.
//
// Part of the SDK's core, which needs no LibTorch (status, options, capabilities, the descriptor: abi.hpp).
#include <cstddef>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

namespace gradsweep::sdk {

struct Status {
  bool ok = true;
  std::string message;

  static Status Ok() { return {}; }
  static Status Error(std::string why) { return {false, std::move(why)}; }
};

// Thrown by `check` on the calling side of the boundary: the message is the one the callee reported.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
// An exception's message without LibTorch's C++ backtrace, which names frames of the other side and helps
// nobody reading a log: c10::Error::what() is what_without_backtrace(), then "\nException raised from ...".
// Read from the text, so that this header needs no LibTorch; tests/host/sdk_core_test.cpp holds it equal to
// what_without_backtrace() for the LibTorch gradsweep is built with.
inline std::string without_backtrace(const char* what) {
  std::string text = what;
  const std::size_t at = text.find("\nException raised from ");
  if (at != std::string::npos) text.erase(at);
  return text;
}
}  // namespace detail

// Runs `body`, converting any exception into an error Status (LibTorch's without its backtrace).
template <class Body>
Status guard(Body&& body) noexcept {
  try {
    body();
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(detail::without_backtrace(e.what()));
  } catch (...) {
    return Status::Error("unknown exception");
  }
}

inline void check(const Status& status) {
  if (!status.ok) throw Error(status.message);
}

}  // namespace gradsweep::sdk
