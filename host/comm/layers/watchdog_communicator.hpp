#pragma once
// The hang layer of the communicator stack (comm/layers/communicator_stack.hpp): every call waits under a
// watchdog (comm/forensics/collective_timeout.hpp), numbered as the flight recorder numbers calls (collectives in
// one sequence 1, 2, ..., point-to-point in another), so that a call still running past the collective
// deadline is named by rank, call and sequence number: "rank 1 of 2: allreduce #3 (allreduce of 4
// float32 (16 B)) did not finish within 0.2 s". Asynchronous calls are watched from issue until their
// request completes or is waited for; with_algorithm's views share the sequence of their communicator,
// each group has its own (its name in the verdict).
//
// When the layer below records the calls (comm/layers/recorder_communicator.hpp: forensics() is not null), the
// overdue rank first dumps its flight recorder, asks the other ranks for theirs (its watchdog thread
// answers their requests too, once a second) and adds what the dumps say to the report (`verdict`:
// which rank did not finish which collective, comm/forensics/hang_verdict.hpp), also written to verdict.json.
// What happens then is the handler's: by default the report is logged, written to the forensics
// verdict file (kind "hang", unless the dumps' verdict is there first) and the process ends with exit
// code 3 (the MPI backend's registry entry passes one that ends the MPI job with MPI_Abort); a test
// passes a handler that records it. Backends that carry their own watchdog (NCCL:
// comm/registry/backend_registry.hpp's BuiltInLayers) do not get this layer, so that one hang is reported once.
#include "comm/forensics/collective_timeout.hpp"
#include "comm/layers/communicator_layer.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace gradsweep::comm {

struct HangReport {
  int rank = 0, size = 1;
  std::string group;  // "" for the job's communicator
  std::string call;   // "allreduce", "recv", "ring allreduce_async"
  std::uint64_t seq = 0;
  std::string what;  // the call as the flight recorder describes it
  double waited_seconds = 0, limit_seconds = 0;
  // From the ranks' flight-recorder dumps: "rank 2 did not finish allreduce #3: ..."; empty when nothing
  // records the calls or no cell directory is set (comm/forensics/collective_forensics.hpp).
  std::string verdict;

  // "rank 1 of 2: allreduce #3 (...) did not finish within 0.2 s (waited 0.2 s)"
  std::string message() const;
};

using HangHandler = std::function<void(const HangReport&)>;

// The exit code of a rank that ends its job over a hang (what `gradsweep run` reads as a timeout).
inline constexpr int kHangExitCode = 3;

// Logs `report`, writes it as the forensics verdict and ends the process (exit code 3).
[[noreturn]] void end_process_on_hang(const HangReport& report);

class WatchdogCommunicator final : public CommunicatorLayer {
 public:
  // How long an overdue rank waits for the other ranks' dumps before it judges from those that came.
  static constexpr double kDefaultDumpGraceSeconds = 5.0;

  // `limit_seconds` <= 0: nothing is watched (GRADSWEEP_COMM_TIMEOUT=0).
  WatchdogCommunicator(std::unique_ptr<HostCommunicator> next, double limit_seconds,
                       HangHandler on_hang = end_process_on_hang, double dump_grace_seconds = kDefaultDumpGraceSeconds);
  WatchdogCommunicator(sdk::Communicator& view, sdk::Algorithm algorithm, WatchdogCommunicator& owner);
  ~WatchdogCommunicator() override;
  WatchdogCommunicator(const WatchdogCommunicator&) = delete;
  WatchdogCommunicator& operator=(const WatchdogCommunicator&) = delete;

  sdk::Status allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept override;
  sdk::Status broadcast(torch::Tensor& tensor, int root) noexcept override;
  sdk::Status allgather(const torch::Tensor& input, torch::Tensor& output) noexcept override;
  sdk::Status reduce_scatter(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op) noexcept override;
  sdk::Status send(const torch::Tensor& tensor, int dst, int tag) noexcept override;
  sdk::Status recv(torch::Tensor& tensor, int src, int tag) noexcept override;
  sdk::Status recv_any(torch::Tensor& tensor, int tag, int* source) noexcept override;
  sdk::Status barrier() noexcept override;
  sdk::Status allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                              std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                                   std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status allgather_async(const torch::Tensor& input, torch::Tensor& output,
                              std::unique_ptr<sdk::Request>* request) noexcept override;
  // Making a group is collective over this communicator: a rank that never joins is a hang like any other
  // (numbered in a sequence of its own: "split #1", "group(node) #2").
  sdk::Status split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept override;
  sdk::Status group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept override;

 protected:
  std::unique_ptr<CommunicatorLayer> over_view(sdk::Communicator& view, sdk::Algorithm algorithm) override {
    return std::make_unique<WatchdogCommunicator>(view, algorithm, *this);
  }
  std::unique_ptr<CommunicatorLayer> over_group(std::unique_ptr<HostCommunicator> group) override;

 private:
  // One communicator's watchdog and sequences, shared with its views; what one watched call is.
  struct Watch;
  struct Call;
  // Runs `body` (the next layer's call) watched as `call` on `tensor`.
  // Which sequence numbers a call: the flight recorder's two (collectives, point-to-point), and groups made.
  enum class Sequence { Collective, PointToPoint, Group };
  template <class Body>
  sdk::Status watched(const std::string& call, Sequence sequence, const torch::Tensor& tensor, Body&& body) noexcept;
  template <class Body>
  sdk::Status watched_async(const std::string& call, const torch::Tensor& tensor,
                            std::unique_ptr<sdk::Request>* request, Body&& body) noexcept;

  std::shared_ptr<Watch> watch_;
  bool owns_watch_ = true;  // false in a view's layer, which shares its communicator's watch
};

}  // namespace gradsweep::comm
