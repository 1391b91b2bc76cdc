#include "support/thread_ranks.hpp"

#include "comm/layers/communicator_stack.hpp"

#include <c10/util/Exception.h>

#include <memory>
#include <thread>

namespace gradsweep::test {
namespace {

// The body's exception as text: LibTorch's without its backtrace.
template <class Body>
std::string error_of(Body&& body) {
  try {
    body();
    return "";
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

RanksOutcome try_ranks(int ranks, const RankBody& body, const RanksOptions& options) {
  if (ranks < 1) throw std::invalid_argument("run_ranks: " + std::to_string(ranks) + " ranks; at least 1");
  RankHub hub(ranks, options.timeout);
  std::vector<std::unique_ptr<comm::HostCommunicator>> comms;
  comm::StackOptions stack;
  stack.timeout_seconds = options.watchdog_seconds;
  stack.on_hang = options.on_hang;
  stack.dump_grace_seconds = options.dump_grace_seconds;
  for (int r = 0; r < ranks; ++r)
    comms.push_back(comm::wrap_communicator(std::make_unique<ThreadCommunicator>(hub, r, options), stack));
  RanksOutcome outcome;
  outcome.errors.resize(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      std::string& error = outcome.errors[static_cast<std::size_t>(r)];
      error = error_of([&] { body(*comms[static_cast<std::size_t>(r)]); });
      if (!error.empty()) hub.fail(r, error);  // only the run's first failure is kept
      hub.finished(r);
    });
  for (std::thread& t : threads) t.join();
  outcome.failure = hub.failure();
  if (!outcome.failure)
    if (const std::string left = hub.unfinished(); !left.empty())
      outcome.failure = HubFailure{-1, "every rank returned, but some collectives were never joined by all: " + left};
  return outcome;
}

void run_ranks(int ranks, const RankBody& body, const RanksOptions& options) {
  const RanksOutcome outcome = try_ranks(ranks, body, options);
  if (!outcome.failure) return;
  const HubFailure& f = *outcome.failure;
  if (f.rank < 0) throw RankFailure(-1, "thread ranks: " + f.message);
  throw RankFailure(f.rank,
                    "rank " + std::to_string(f.rank) + " of " + std::to_string(ranks) + " failed: " + f.message);
}

}  // namespace gradsweep::test
