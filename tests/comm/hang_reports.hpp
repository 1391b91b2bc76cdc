#pragma once
// What the hang layer reported, from any rank's watchdog thread: a HangHandler that keeps every report.
#include "comm/watchdog_communicator.hpp"

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
};

}  // namespace gradsweep::test
