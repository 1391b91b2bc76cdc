#include "comm/registry/backend_registry.hpp"

#include "comm/core/backend_features.hpp"
#include "comm/forensics/collective_forensics.hpp"
#include "comm/nccl/nccl_backend.hpp"
#include "comm/mpi/mpi_runtime.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>

namespace gradsweep::comm {
namespace {

// runtime.device "cuda:N" -> N; "cuda" (or anything else) -> -1, the NCCL backend's "local rank modulo GPUs".
int cuda_device_index(const std::string& device) {
  const auto colon = device.find(':');
  return colon == std::string::npos ? -1 : std::stoi(device.substr(colon + 1));
}

// A hung MPI job ends as MPI jobs end: MPI_Abort with the hang's exit code, which mpirun and srun carry to
// every rank at once (a rank that only exits leaves the others to their launcher's own timing). The verdict
// of the ranks' dumps first, then the call that waited, as `gradsweep run` classifies failures from them.
[[noreturn]] void end_mpi_job_on_hang(const HangReport& report) {
  if (!report.verdict.empty())
    spdlog::error("hang: {} (flight recorder dumps in {})", report.verdict, forensics::directory().string());
  forensics::write_verdict("hang", report.call + " #" + std::to_string(report.seq), "hang: " + report.message());
  mpi::end_hung_job(report.what + " on rank " + std::to_string(report.rank) + " of " + std::to_string(report.size) +
                        (report.group.empty() ? "" : " in group " + report.group),
                    report.waited_seconds, report.limit_seconds, kHangExitCode);
}

std::vector<BackendEntry> built_in_backends() {
  std::vector<BackendEntry> entries;
  entries.push_back({"local",
                     [](int) { return local_features(); },
                     true,
                     {},
                     nullptr,
                     [](const BackendOptions&) { return make_local_communicator(); }});
  entries.push_back({"mpi", mpi_features, true, {}, end_mpi_job_on_hang, [](const BackendOptions&) {
                       return make_mpi_communicator();
                     }});
  BackendEntry nccl{"nccl",  nccl_features, nccl_built(), {.watchdog = true, .recorder = true, .counting = true},
                    nullptr, nullptr};
#if defined(GRADSWEEP_WITH_NCCL) && GRADSWEEP_WITH_NCCL
  nccl.make = [](const BackendOptions& options) {
    return make_nccl_communicator(cuda_device_index(options.device), [] { return make_communicator("mpi"); });
  };
#else
  (void)cuda_device_index;
#endif
  entries.push_back(std::move(nccl));
  return entries;
}

std::mutex registry_mutex;

std::vector<BackendEntry>& registry() {  // guarded by registry_mutex
  static std::vector<BackendEntry> entries = built_in_backends();
  return entries;
}

}  // namespace

void register_backend(BackendEntry entry) {
  if (entry.name.empty()) throw std::invalid_argument("register_backend: a backend needs a name");
  if (!entry.features) throw std::invalid_argument("register_backend '" + entry.name + "': no features function");
  const std::lock_guard<std::mutex> lock(registry_mutex);
  std::vector<BackendEntry>& entries = registry();
  const auto it =
      std::find_if(entries.begin(), entries.end(), [&](const BackendEntry& e) { return e.name == entry.name; });
  if (it != entries.end())
    *it = std::move(entry);
  else
    entries.push_back(std::move(entry));
}

std::vector<std::string> backend_names() {
  const std::lock_guard<std::mutex> lock(registry_mutex);
  std::vector<std::string> names;
  for (const BackendEntry& e : registry()) names.push_back(e.name);
  return names;
}

BackendEntry backend_named(const std::string& name) {
  const std::lock_guard<std::mutex> lock(registry_mutex);
  std::string known;
  for (const BackendEntry& e : registry()) {
    if (e.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.name;
  }
  throw std::invalid_argument("communicator backend '" + name + "': no such backend (known: " + known + ")");
}

sdk::CommFeatures backend_features(const std::string& name, int world) { return backend_named(name).features(world); }

std::unique_ptr<HostCommunicator> make_communicator(const std::string& name, const BackendOptions& options) {
  const BackendEntry entry = backend_named(name);
  if (!entry.built || !entry.make) throw std::runtime_error("communicator backend '" + name + "': not in this build");
  StackOptions stack;
  stack.built_in = entry.layers;
  if (entry.on_hang) stack.on_hang = entry.on_hang;
  return wrap_communicator(entry.make(options), stack);
}

}  // namespace gradsweep::comm
