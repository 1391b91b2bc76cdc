#pragma once
// Scalars recorded during one step by plugins (through sdk::MetricsSink) and by the host.
#include <gradsweep/sdk/services.hpp>

#include <map>
#include <string>

namespace gradsweep::services {

class StepMetrics final : public sdk::MetricsSink {
 public:
  void record(const std::string& name, double value) noexcept override {
    try {
      values_[name] = value;
    } catch (...) {
    }
  }
  // Returns what was recorded since the last call and starts afresh.
  std::map<std::string, double> take() { return std::exchange(values_, {}); }

 private:
  std::map<std::string, double> values_;
};

}  // namespace gradsweep::services
