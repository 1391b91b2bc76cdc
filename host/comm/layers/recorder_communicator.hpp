#pragma once
// The recording layer of the communicator stack (comm/layers/communicator_stack.hpp): every call a rank makes,
// in its flight recorder (comm/forensics/flight_recorder.hpp), numbered (collectives 1, 2, ..., point-to-point in a
// sequence of its own), with its state and times, whatever backend moves the data. With it come what
// the recorder makes possible on any backend:
//   - dumps into the cell directory, the exchange of requests for them, and the hang verdict from them
//     (comm/forensics/collective_forensics.hpp), which the watchdog layer above asks for when a call is overdue;
//   - runtime.check_collectives' fingerprints (comm/forensics/collective_fingerprint.hpp): before each collective
//     the ranks exchange what they are about to issue, over the backend's own native allgather, uncounted
//     (comm_ledger.hpp's Uncounted: the check moves bytes no strategy asked for), and a mismatch fails
//     every rank naming both sides;
//   - GRADSWEEP_INJECT_FAULT's failing call (comm/forensics/fault_injection.hpp), before the call is recorded.
// An async call is running and done as the backend's worker runs it when the backend says so
// (comm/core/async_progress.hpp: the MPI backend); otherwise running from issue until its request is waited
// for or destroyed. Groups get their own recorder and dump files (the group's name and
// its members' ranks in the job, exchanged once when the group is made); views share their
// communicator's. A transport that knows which peers its collectives wait on (the MPI ring) gets the
// recorder's list to write them into (HostCommunicator::report_peer_waits_to). Backends that keep their
// own recorder (BuiltInLayers::recorder) do not get this layer.
#include "comm/forensics/collective_forensics.hpp"
#include "comm/layers/communicator_layer.hpp"

#include <memory>
#include <string>
#include <vector>

namespace gradsweep::comm {

class RecorderCommunicator final : public CommunicatorLayer {
 public:
  explicit RecorderCommunicator(std::unique_ptr<HostCommunicator> next);
  RecorderCommunicator(sdk::Communicator& view, sdk::Algorithm algorithm, RecorderCommunicator& owner);
  // A group's: `job_ranks` are its members' ranks in the job, in the group's rank order.
  RecorderCommunicator(std::unique_ptr<HostCommunicator> group, const std::vector<int>& job_ranks);

  const FlightRecorder* flight_recorder() override;
  CollectiveForensics* forensics() override;

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

 protected:
  std::unique_ptr<CommunicatorLayer> over_view(sdk::Communicator& view, sdk::Algorithm algorithm) override {
    return std::make_unique<RecorderCommunicator>(view, algorithm, *this);
  }
  std::unique_ptr<CommunicatorLayer> over_group(std::unique_ptr<HostCommunicator> group) override;

 private:
  // One communicator's recorder and check, shared with its views.
  struct Shared;
  // Records `shape` around `body` (the next layer's call): issued, checked (a collective, when
  // runtime.check_collectives asks), running, then done or failed as body's Status says.
  template <class Body>
  sdk::Status recorded(const CallShape& shape, Body&& body) noexcept;
  template <class Body>
  sdk::Status recorded_async(const CallShape& shape, std::unique_ptr<sdk::Request>* request, Body&& body) noexcept;
  // Issues `shape` in the recorder after the fault injection and the fingerprint check, running when
  // `start` (a blocking call); returns its id.
  std::uint64_t issue(const CallShape& shape, bool start);
  void check_same_call(const CallShape& shape, std::uint64_t seq);
  bool ring() const { return algorithm() != sdk::Algorithm::Native; }

  std::shared_ptr<Shared> shared_;
  sdk::Communicator& native_;  // the backend's own communicator (a view's owner's), for the check's exchange
  int job_rank_ = 0;           // this rank in the job, for its groups' member lists
};

}  // namespace gradsweep::comm
