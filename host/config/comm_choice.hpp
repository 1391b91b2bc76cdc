#pragma once
// Which communicator backend a job gets: runtime.comm in the cell configuration, overridden by the
// GRADSWEEP_COMM environment variable, resolved against the device, the build and the launcher. Only the
// choosing rule lives here, as a backend's name: what each backend offers and how it is made is the
// registry's (comm/registry/backend_registry.hpp), which sits above config/ and so cannot be included from here.
// Kept apart from creating the backend so that the rule can be tested on any machine.
#include <string>

namespace gradsweep::config {

inline constexpr const char* kCommChoices = "auto, local, mpi or nccl";
// The same as declared choices (runtime.comm's, checked by config/option_schema's check_choice).
inline constexpr const char* kCommChoiceList = "auto|local|mpi|nccl";

// One of kCommChoiceList.
bool is_comm_choice(const std::string& choice);

struct CommRequest {
  std::string config_choice = "auto";  // runtime.comm
  std::string config_file;             // for messages
  std::string env_choice;              // GRADSWEEP_COMM; empty when unset
  std::string device = "cpu";          // runtime.device
  bool nccl_built = false;
  bool launched_by_mpi = false;
};

struct CommDecision {
  std::string backend;  // a name in comm/registry/backend_registry.hpp: "local", "mpi" or "nccl"
  std::string why;      // for the log: "runtime.comm: auto, runtime.device cuda, NCCL built in"
};

// auto: NCCL when the device is CUDA and NCCL is built in (under an MPI launcher, or alone as one rank);
// else MPI under an MPI launcher; else local. An explicit choice is taken as it is, except that nccl
// needs a build with NCCL and a CUDA device: both are errors here (std::runtime_error naming where the
// choice came from and what to do), as is a GRADSWEEP_COMM value outside kCommChoices.
CommDecision choose_comm(const CommRequest& request);

}  // namespace gradsweep::config
