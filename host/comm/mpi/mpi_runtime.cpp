#include "comm/mpi/mpi_runtime.hpp"

#include "env/environment.hpp"

#include <mpi.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

namespace gradsweep::comm::mpi {
namespace {

int granted_level = -1;  // set once by ensure_initialized

bool env_set(const char* name) { return env::is_set(name); }

// Registered with atexit right after MPI_Init_thread, so it runs after main returns and after every
// communicator (which are never static) is gone. Open MPI's MPI_Finalize waits for every rank: a rank
// that fails must leave through abort_job instead, or it would wait here for ranks stuck in a collective.
void finalize_at_exit() {
  if (active()) MPI_Finalize();
}

}  // namespace

bool launched_by_mpi() { return env_set("OMPI_COMM_WORLD_SIZE") || env_set("PMIX_RANK") || env_set("PMI_SIZE"); }

int ensure_initialized() {
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  if (granted_level >= 0) return granted_level;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) throw std::runtime_error("MPI: already finalised in this process; it cannot start again");
  if (initialized) {  // someone else started it (a test harness, an embedding program): use what it got
    MPI_Query_thread(&granted_level);
    return granted_level;
  }
  // Strategies may communicate from a background thread (overlapping communication with backward),
  // hence MULTIPLE. The level granted is logged by the communicator; see docs/communicators.md.
  int provided = MPI_THREAD_SINGLE;
  // A rank waiting inside Open MPI polls its queues without pause. The training thread and the
  // communicator's worker thread share the rank's cores, so a waiting worker would steal the cycles
  // backward needs (measured: backward 1.5x slower beside a polling MPI_Allreduce). Yielding while idle
  // gives them back. A user's own setting wins.
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) throw std::runtime_error("MPI_Init_thread failed: " + error_message(rc));
  std::atexit(finalize_at_exit);
  // Errors come back as codes (turned into Status messages) instead of killing the job silently.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  granted_level = provided;
  return granted_level;
}

bool active() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

std::string thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "thread level " + std::to_string(level);
  }
}

bool is_thread_multiple(int level) { return level == MPI_THREAD_MULTIPLE; }

std::string error_message(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error code " + std::to_string(code);
  std::string message(text, static_cast<std::size_t>(length));
  int error_class = code;
  if (MPI_Error_class(code, &error_class) == MPI_SUCCESS && error_class != code) {
    char class_text[MPI_MAX_ERROR_STRING] = {};
    int class_length = 0;
    if (MPI_Error_string(error_class, class_text, &class_length) == MPI_SUCCESS)
      message += " (" + std::string(class_text, static_cast<std::size_t>(class_length)) + ")";
  }
  return message;
}

void abort_job(int exit_code) noexcept {
  std::fflush(stdout);
  std::fflush(stderr);
  if (active()) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; this covers a job MPI never started
}

void end_hung_job(const std::string& what, double waited, double limit, int exit_code) {
  spdlog::error(
      "{} has waited {:.0f} s (limit {:.0f} s: runtime.comm_timeout, or GRADSWEEP_COMM_TIMEOUT) for other ranks "
      "that never joined it: ranks calling collectives in a different order or with different sizes, or a rank "
      "stuck or dead. Ending the job (exit code {})",
      what, waited, limit, exit_code);
  spdlog::default_logger()->flush();
  abort_job(exit_code);
}

}  // namespace gradsweep::comm::mpi
