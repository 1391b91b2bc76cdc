#include "config/comm_choice.hpp"

#include "config/option_schema.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace gradsweep::config {

bool is_comm_choice(const std::string& choice) {
  const std::vector<std::string> choices = split_choices(kCommChoiceList);
  return std::find(choices.begin(), choices.end(), choice) != choices.end();
}

CommDecision choose_comm(const CommRequest& request) {
  const bool from_env = !request.env_choice.empty() && request.env_choice != "auto";
  if (!request.env_choice.empty() && !is_comm_choice(request.env_choice))
    throw std::runtime_error("GRADSWEEP_COMM='" + request.env_choice + "': expected " + kCommChoices);
  const std::string choice = from_env ? request.env_choice : request.config_choice;
  const std::string source = from_env ? "GRADSWEEP_COMM=" + choice : request.config_file + ": runtime.comm: " + choice;
  const bool cuda = request.device.rfind("cuda", 0) == 0;

  if (choice == "nccl") {
    if (!request.nccl_built)
      throw std::runtime_error(source +
                               ": this gradsweep was built without the NCCL backend (CMake found no nccl.h/libnccl "
                               "and CUDA runtime; set NCCL_ROOT / CUDAToolkit_ROOT and rebuild), use mpi or local");
    if (!cuda)
      throw std::runtime_error(source + ": the NCCL backend moves CUDA tensors, but runtime.device is '" +
                               request.device + "'; set runtime.device: cuda, or use mpi for CPU tensors");
    return {"nccl", source};
  }
  if (choice == "mpi") return {"mpi", source};
  if (choice == "local") return {"local", source};

  // auto. Every process is either under a launcher or alone (one rank): both may use NCCL on a GPU.
  const std::string why = source + ", runtime.device " + request.device + ", " +
                          (request.nccl_built ? "NCCL built in" : "built without NCCL") + ", " +
                          (request.launched_by_mpi ? "started by an MPI launcher" : "no MPI launcher");
  if (cuda && request.nccl_built) return {"nccl", why};
  if (request.launched_by_mpi) return {"mpi", why};
  return {"local", why};
}

}  // namespace gradsweep::config
