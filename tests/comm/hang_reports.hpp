#pragma once
// What the hang layer reported, from any rank's watchdog thread: a HangHandler that keeps every report.
#include "comm/layers/watchdog_communicator.hpp"
#include "support/thread_communicator.hpp"

#include <mutex>
#include <vector>

namespace gradsweep::test {

struct HangReports {
  std::mutex mutex;
  std::vector<comm::HangReport> reports;

  comm::HangHandler handler() {
    return [this](const comm::HangReport& r) {
      const std::lock_guard<std::mutex> lock(mutex);
      reports.push_back(r);
    };
  }
  std::vector<comm::HangReport> taken() {
    const std::lock_guard<std::mutex> lock(mutex);
    return reports;
  }

  // Thread ranks whose hang layer reports here a call still running after `watchdog_seconds`; an overdue rank
  // waits `dump_grace_seconds` for the others' dumps.
  RanksOptions watched(double watchdog_seconds,
                       double dump_grace_seconds = comm::WatchdogCommunicator::kDefaultDumpGraceSeconds) {
    RanksOptions options;
    options.watchdog_seconds = watchdog_seconds;
    options.dump_grace_seconds = dump_grace_seconds;
    options.on_hang = handler();
    return options;
  }
};

}  // namespace gradsweep::test
