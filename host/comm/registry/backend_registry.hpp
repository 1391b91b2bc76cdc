#pragma once
// The communicator backends by name: what each offers on N ranks, whether this build has it, and how to
// make one. config/comm_choice.hpp picks a name; the trainer, the planner and `gradsweep bench comm` ask
// here for the rest, so that adding a backend is one entry and no enum elsewhere.
//
// make_communicator() returns a backend wrapped in the layers of comm/layers/communicator_stack.hpp, the same
// for every backend: what a strategy gets is never a bare transport.
#include "comm/layers/communicator_stack.hpp"
#include "comm/core/host_communicator.hpp"

#include <gradsweep/sdk/capabilities.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gradsweep::comm {

// What a factory may need: runtime.device (the NCCL backend's GPU).
struct BackendOptions {
  std::string device = "cpu";
};

struct BackendEntry {
  std::string name;
  // What every communicator of the backend answers on `world` ranks (sdk::Communicator::features), and
  // what the planner tells a strategy's check_plan before the job exists.
  std::function<sdk::CommFeatures(int world)> features;
  bool built = false;    // false: named (so the choice is understood) but not in this build
  BuiltInLayers layers;  // what the stack need not add (comm/layers/communicator_stack.hpp)
  // How a hang found by the stack's watchdog ends the job; null: end_process_on_hang (exit code 3).
  HangHandler on_hang;
  // The bare backend; throws std::runtime_error when it cannot start.
  std::function<std::unique_ptr<HostCommunicator>(const BackendOptions&)> make;
};

// Adds (or replaces) a backend under entry.name. The built-in ones (local, mpi, nccl) are there from the
// start; a test may add its own.
void register_backend(BackendEntry entry);
// Every backend known, in registration order.
std::vector<std::string> backend_names();
// Throws std::invalid_argument naming the known backends when `name` is none of them.
BackendEntry backend_named(const std::string& name);

// backend_named(name).features(world).
sdk::CommFeatures backend_features(const std::string& name, int world);

// The backend `name`, made and wrapped in the layers every backend gets (comm/layers/communicator_stack.hpp).
// Throws std::runtime_error when the backend is not built in or cannot start.
std::unique_ptr<HostCommunicator> make_communicator(const std::string& name, const BackendOptions& options = {});

}  // namespace gradsweep::comm
