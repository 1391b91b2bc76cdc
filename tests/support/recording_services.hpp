#pragma once
// The Logger and MetricsSink a plugin's parts receive, recording what they are told: for unit tests
// of strategy parts outside the host (one pair per thread-rank; neither is shared between threads).
#include <gradsweep/sdk/services.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gradsweep::test {

class RecordingLog final : public sdk::Logger {
 public:
  void log(sdk::LogLevel level, const std::string& message) noexcept override { lines.emplace_back(level, message); }
  std::vector<std::pair<sdk::LogLevel, std::string>> lines;
};

class RecordingMetrics final : public sdk::MetricsSink {
 public:
  void record(const std::string& name, double value) noexcept override { values[name].push_back(value); }
  std::map<std::string, std::vector<double>> values;  // every value recorded under each name, in order
};

}  // namespace gradsweep::test
