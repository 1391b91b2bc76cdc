#include "experiment/launch/provenance.hpp"

#include "util/atomic_file.hpp"

#include <torch/version.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>

#ifndef GRADSWEEP_VERSION
#define GRADSWEEP_VERSION "unknown"
#endif
#ifndef GRADSWEEP_GIT_DESCRIBE
#define GRADSWEEP_GIT_DESCRIBE ""
#endif
#ifndef GRADSWEEP_SOURCE_DIR
#define GRADSWEEP_SOURCE_DIR ""
#endif

namespace gradsweep::experiment {
namespace {

// First line of a command's stdout, "" when it fails.
std::string first_line_of(const std::string& command) {
  FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return "";
  std::array<char, 512> buffer{};
  std::string line;
  if (fgets(buffer.data(), buffer.size(), pipe) != nullptr) line = buffer.data();
  pclose(pipe);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown";
}

std::string version_code(long code) {
  // CUDART_VERSION 12040 = 12.4; NCCL as sdk::BuildFingerprint records it: 22809 = 2.28.9.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

nlohmann::json git_info() {
  std::string describe;
  const std::string source = GRADSWEEP_SOURCE_DIR;
  if (!source.empty()) describe = first_line_of("git -C '" + source + "' describe --always --dirty --abbrev=12");
  if (describe.empty()) describe = GRADSWEEP_GIT_DESCRIBE;
  const bool dirty = describe.size() > 6 && describe.compare(describe.size() - 6, 6, "-dirty") == 0;
  return {{"version", GRADSWEEP_VERSION},
          {"commit", describe.empty() ? "unknown" : (dirty ? describe.substr(0, describe.size() - 6) : describe)},
          {"dirty", dirty}};
}

}  // namespace

const nlohmann::json& machine_provenance() {
  static const nlohmann::json facts = [] {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    const std::string gpu = first_line_of("nvidia-smi --query-gpu=name --format=csv,noheader");
    nlohmann::json j{{"gradsweep", git_info()},
                     {"libtorch", std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
                                      "." + std::to_string(TORCH_VERSION_PATCH)},
                     {"open_mpi", first_line_of("mpirun --version")},
                     {"host", host},
                     {"cpu", cpu_model()},
                     {"cpus", static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))},
                     {"gpu", gpu.empty() ? "none" : gpu}};
#if defined(GRADSWEEP_WITH_NCCL) && GRADSWEEP_WITH_NCCL
    j["nccl"] = version_code(GRADSWEEP_NCCL_VERSION);
    j["cuda"] =
        std::to_string(GRADSWEEP_CUDA_VERSION / 1000) + "." + std::to_string(GRADSWEEP_CUDA_VERSION % 1000 / 10);
#else
    j["nccl"] = "none (built without NCCL)";
    j["cuda"] = "none (built without CUDA)";
    (void)&version_code;
#endif
    return j;
  }();
  return facts;
}

void write_provenance(const std::filesystem::path& cell_dir, const std::string& start, const std::string& end,
                      const nlohmann::json& load, const nlohmann::json& extra) {
  nlohmann::json j = machine_provenance();
  if (extra.is_object()) j.update(extra);
  j["start"] = start;
  j["end"] = end;
  if (!load.is_null()) j["load"] = load;
  util::write_file_atomically(cell_dir / "provenance.json", j.dump(2) + "\n");
}

nlohmann::json recorded_provenance(const std::filesystem::path& cell_dir) {
  std::ifstream in(cell_dir / "provenance.json");
  if (!in) return nullptr;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  return j.is_object() ? j : nullptr;
}

std::string recorded_start(const std::filesystem::path& cell_dir) {
  // An unreadable file just loses the start.
  const nlohmann::json j = recorded_provenance(cell_dir);
  if (!j.is_object() || !j.contains("start") || !j["start"].is_string()) return "";
  return j["start"].get<std::string>();
}

}  // namespace gradsweep::experiment
