#pragma once
// A watchdog over blocking communication calls. A rank that never joins a collective (a strategy bug
// that calls collectives in a different order on different ranks, a peer stuck elsewhere) leaves every
// other rank waiting inside MPI forever; this turns that hang into an error that names the call, the
// rank and how long it waited, and then ends the job.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace gradsweep::comm {

class CollectiveTimeout {
 public:
  // Called once, from the watchdog's thread, with a description of the oldest overdue call; it is
  // expected not to return (it ends the job).
  using Expired = std::function<void(const std::string& what, double waited_seconds)>;

  // Called from the watchdog's thread about once a second (the flight recorder answers requests for
  // dumps there: comm/forensics/collective_forensics.hpp).
  using Tick = std::function<void()>;

  // limit <= 0 disables the watchdog (no thread is started).
  CollectiveTimeout(std::chrono::duration<double> limit, Expired on_expired, Tick on_tick = nullptr);
  ~CollectiveTimeout();
  CollectiveTimeout(const CollectiveTimeout&) = delete;
  CollectiveTimeout& operator=(const CollectiveTimeout&) = delete;

  double limit_seconds() const { return limit_.count(); }

  // Marks one call in flight for as long as it lives.
  class Scope {
   public:
    Scope(CollectiveTimeout& owner, std::string what);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    CollectiveTimeout* owner_;
    std::uint64_t id_ = 0;
  };

 private:
  using Clock = std::chrono::steady_clock;
  struct Call {
    Clock::time_point start;
    std::string what;
  };

  void watch();

  const std::chrono::duration<double> limit_;
  const Expired on_expired_;
  const Tick on_tick_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::uint64_t, Call> in_flight_;  // by id: the first entry is the oldest call
  std::uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

// The limit when nothing is configured (a communicator made outside `gradsweep train`: `bench comm`, the
// tests' ranks): runtime.comm_timeout's default, which config/cell_keys.cpp declares and
// tests/host/config_defaults_test.cpp holds this equal to (comm/ cannot include config/).
inline constexpr double kDefaultCommTimeoutSeconds = 600.0;

// The limit from GRADSWEEP_COMM_TIMEOUT (seconds; 0 turns the watchdog off), else the configured one
// (runtime.comm_timeout, set before backends are made), else `fallback`. Throws std::invalid_argument on
// an environment value that is not a number.
double comm_timeout_seconds(double fallback);
void set_configured_comm_timeout(double seconds);

}  // namespace gradsweep::comm
