#pragma once
// Logging for the host and, through the sdk::Logger service, for plugins. Every line carries the rank,
// so that interleaved output of many ranks (and a failing rank's last words) can be told apart.
#include <gradsweep/sdk/services.hpp>

#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>

namespace gradsweep::services {

// Sets the default spdlog logger: "[rank 3] [info] message" to stderr and, when `file` is given, to it.
void init_logging(int rank, const std::filesystem::path& file = {});

class PluginLogger final : public sdk::Logger {
 public:
  explicit PluginLogger(std::string plugin) : plugin_(std::move(plugin)) {}
  void log(sdk::LogLevel level, const std::string& message) noexcept override;

 private:
  std::string plugin_;
};

}  // namespace gradsweep::services
