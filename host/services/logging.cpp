#include "services/logging.hpp"

#include "env/environment.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace gradsweep::services {

void init_logging(int rank, const std::filesystem::path& file) {
  std::vector<spdlog::sink_ptr> sinks{std::make_shared<spdlog::sinks::stderr_color_sink_mt>()};
  if (!file.empty()) sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(file.string(), false));
  auto logger = std::make_shared<spdlog::logger>("gradsweep", sinks.begin(), sinks.end());
  logger->set_pattern("[%H:%M:%S.%e] [rank " + std::to_string(rank) + "] [%^%l%$] %v");
  logger->flush_on(spdlog::level::info);
  if (const auto level = env::raw("GRADSWEEP_LOG_LEVEL")) logger->set_level(spdlog::level::from_str(*level));
  spdlog::set_default_logger(logger);
}

void PluginLogger::log(sdk::LogLevel level, const std::string& message) noexcept {
  try {
    switch (level) {
      case sdk::LogLevel::Debug: spdlog::debug("{}: {}", plugin_, message); break;
      case sdk::LogLevel::Info: spdlog::info("{}: {}", plugin_, message); break;
      case sdk::LogLevel::Warn: spdlog::warn("{}: {}", plugin_, message); break;
      case sdk::LogLevel::Error: spdlog::error("{}: {}", plugin_, message); break;
    }
  } catch (...) {
    // Logging must never take a rank down.
  }
}

}  // namespace gradsweep::services
