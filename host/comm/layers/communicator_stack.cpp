#include "comm/layers/communicator_stack.hpp"

#include "comm/layers/checked_communicator.hpp"
#include "comm/forensics/collective_timeout.hpp"
#include "comm/layers/counting_communicator.hpp"
#include "comm/layers/recorder_communicator.hpp"

namespace gradsweep::comm {
namespace {
// A rank that waits this long inside one call is taken to be hung (the MPI backend's default too).
}  // namespace

std::unique_ptr<HostCommunicator> wrap_communicator(std::unique_ptr<HostCommunicator> backend,
                                                    const StackOptions& options) {
  std::unique_ptr<HostCommunicator> stack = std::move(backend);
  if (!options.built_in.counting) stack = std::make_unique<CountingCommunicator>(std::move(stack));
  if (!options.built_in.recorder) stack = std::make_unique<RecorderCommunicator>(std::move(stack));
  if (!options.built_in.watchdog) {
    const double limit =
        options.timeout_seconds >= 0 ? options.timeout_seconds : comm_timeout_seconds(kDefaultCommTimeoutSeconds);
    stack =
        std::make_unique<WatchdogCommunicator>(std::move(stack), limit, options.on_hang, options.dump_grace_seconds);
  }
  return std::make_unique<CheckedCommunicator>(std::move(stack));
}

}  // namespace gradsweep::comm
