#pragma once
// Errors cross the plugin boundary as values, never as exceptions.
//
// A plugin may be built by another team, at another time, with other flags. An exception thrown in one
// shared object and caught in another only works when both agree on every type involved, so every call
// that crosses the boundary is `noexcept` and returns a Status. Inside a plugin (or inside the host)
// code throws as usual; `guard` turns the exception into a Status at the edge and `check` turns it back.
#include <c10/util/Exception.h>

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

// Runs `body`, converting any exception into an error Status. LibTorch errors lose their C++ backtrace
// (it names frames of the other side, which helps nobody reading a log).
template <class Body>
Status guard(Body&& body) noexcept {
  try {
    body();
    return Status::Ok();
  } catch (const c10::Error& e) {
    return Status::Error(e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Status::Error(e.what());
  } catch (...) {
    return Status::Error("unknown exception");
  }
}

inline void check(const Status& status) {
  if (!status.ok) throw Error(status.message);
}

}  // namespace gradsweep::sdk
