#include "env/environment.hpp"

#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace gradsweep::env {
namespace {

const std::vector<Variable> kRegistry{
    {"GRADSWEEP_COMM", "`auto`, `local`, `mpi` or `nccl`", "unset: `runtime.comm`",
     "the communicator backend, overriding the file's `runtime.comm` (`auto` leaves the file's choice)",
     "auto, local, mpi or nccl", true, true},
    {"GRADSWEEP_COMM_TIMEOUT", "seconds >= 0", "unset: `runtime.comm_timeout`",
     "seconds a rank may wait in one communication call before the job is ended as hung; 0 = never",
     "a number of seconds (0 turns the watchdog off)", true, false},
    {"GRADSWEEP_CHECK_COLLECTIVES", "`0`, `1` (`false`, `true`)", "unset: `runtime.check_collectives`",
     "check before each collective that every rank issues the same call", "0 or 1", true, false},
    {"GRADSWEEP_TORCH_CUDA", "`0`, `1` (`false`, `true`)", "unset: loaded where there is an NVIDIA driver",
     "load LibTorch's CUDA half (libtorch_cuda.so) when the process starts: 1 always, 0 never "
     "(docs/howto/gpu-cluster.md)",
     "0 or 1", true, true},
    {"GRADSWEEP_PLUGIN_PATH", "directories separated by `:`", "unset",
     "plugin directories, searched after `plugins.paths` and before the built-in ones", "", true, true},
    {"GRADSWEEP_LOG_LEVEL", "`trace`, `debug`, `info`, `warn`, `error`, `critical`, `off`", "`info`",
     "the least severe log level printed (spdlog's names)", "", true, false},
    {"GRADSWEEP_RING_SEGMENT_BYTES", "integer > 0", "524288 (512 KiB)",
     "the ring's segment size (tuning and benchmarks; every rank must see the same value)", "a positive integer", true,
     false},
    {"GRADSWEEP_RING_LOOKAHEAD", "integer > 0", "4",
     "ring exchanges started ahead of the one being finished (tuning; the same on every rank)", "a positive integer",
     true, false},
    {"GRADSWEEP_RANKS_PER_NODE", "integer in [1, 2^20]", "unset: the ranks sharing memory",
     "the hierarchical allreduce's nodes as blocks of this many consecutive ranks (tests, benchmarks)",
     "a positive integer", true, false},
    {"GRADSWEEP_INJECT_FAULT", "`RANK:STEP`", "unset",
     "that rank's first MPI call at or after STEP fails once (`gradsweep check strategy`'s no-hang check)",
     "RANK:STEP, two non-negative integers", true, false},
    {"GRADSWEEP_CLUSTER", "a cluster's name", "unset",
     "set by `cluster exec` and the emulated launcher: the job's nodes share this machine's cores (`bench comm`)", "",
     true, false},
    {"OMPI_COMM_WORLD_SIZE", "integer", "unset", "set by Open MPI's mpirun: the process was started by a launcher", "",
     false, false},
    {"PMIX_RANK", "integer", "unset", "set by a PMIx launcher (srun --mpi=pmix): a launcher, and the rank", "", false,
     false},
    {"PMI_SIZE", "integer", "unset", "set by a PMI launcher: the process was started by a launcher", "", false, false},
    {"OMPI_COMM_WORLD_RANK", "integer", "unset", "the rank, named in NCCL set-up errors before MPI runs", "", false,
     false},
    {"PMI_RANK", "integer", "unset", "the rank under a PMI launcher, as OMPI_COMM_WORLD_RANK", "", false, false},
    {"PATH", "directories separated by `:`", "", "where `ip`, `tc`, `unshare` and the Slurm commands are found", "",
     false, false},
    {"XDG_CACHE_HOME", "directory", "unset: `$HOME/.cache`",
     "the caches of measured peak FLOP/s and of emulated cells' one-node compute references are under it", "", false,
     false},
    {"HOME", "directory", "", "the cache's fallback parent (`$HOME/.cache/gradsweep`)", "", false, false},
    {"LD_LIBRARY_PATH", "directories separated by `:`", "", "passed on to the ranks by the local launcher", "", false,
     true},
    {"GLIBC_TUNABLES", "glibc tunables", "unset",
     "set: a rank leaves glibc's malloc thresholds as the user tuned them (docs/measurements/single-rank.md, \"Memory "
     "reuse\"); "
     "passed on to the ranks",
     "", false, true},
    {"MALLOC_MMAP_THRESHOLD_", "bytes", "unset", "set: as GLIBC_TUNABLES", "", false, true},
    {"MALLOC_TRIM_THRESHOLD_", "bytes", "unset", "set: as GLIBC_TUNABLES", "", false, true},
};

[[noreturn]] void refuse(const Variable& v, const std::string& value) {
  throw std::invalid_argument(std::string(v.name) + "='" + value + "': expected " + v.expected);
}

}  // namespace

const std::vector<Variable>& registry() { return kRegistry; }

const Variable& variable(std::string_view name) {
  for (const Variable& v : kRegistry)
    if (name == v.name) return v;
  throw std::logic_error("environment variable " + std::string(name) + " is not in the registry (env/environment.cpp)");
}

std::optional<std::string> raw(std::string_view name) {
  const char* value = std::getenv(variable(name).name);  // the one getenv of the host
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

bool is_set(std::string_view name) {
  const auto value = raw(name);
  return value && !value->empty();
}

std::string text(std::string_view name) { return raw(name).value_or(""); }

std::optional<long> positive_integer(std::string_view name, long max) {
  const auto value = raw(name);
  if (!value || value->empty()) return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(value->c_str(), &end, 10);
  if (end == value->c_str() || *end != '\0' || n <= 0 || n > max) refuse(variable(name), *value);
  return n;
}

std::optional<double> non_negative_number(std::string_view name) {
  const auto value = raw(name);
  if (!value || value->empty()) return std::nullopt;
  char* end = nullptr;
  const double x = std::strtod(value->c_str(), &end);
  if (end == value->c_str() || *end != '\0' || x < 0) refuse(variable(name), *value);
  return x;
}

std::optional<bool> flag(std::string_view name) {
  const auto value = raw(name);
  if (!value || value->empty()) return std::nullopt;
  if (*value == "1" || *value == "true") return true;
  if (*value == "0" || *value == "false") return false;
  refuse(variable(name), *value);
}

std::vector<std::string> path_list(std::string_view name) {
  std::vector<std::string> items;
  std::stringstream list(text(name));
  for (std::string item; std::getline(list, item, ':');)
    if (!item.empty()) items.push_back(item);
  return items;
}

}  // namespace gradsweep::env
