#pragma once
// The parameter-server protocol shared by `ps`, `ps-amp` and `sampled`'s transport ps: rank 0 serves,
// ranks 1..N-1 are workers. Every step each worker sends one push (a header, then its gradient) and
// waits for one pull (a header, then parameters). The payload is the strategy's: whole flat gradients
// for `ps`, packed rows for `sampled`; the protocol only moves it and keeps the bookkeeping both need.
//
//   mode sync    the server takes the pushes in rank order (so the sum is the same every run), adds
//                them to its own gradient, applies one update and answers every worker with it.
//   mode async   the server takes the pushes in the order they arrive (recv_any), applies each alone
//                and answers that worker at once. A gradient computed on parameters k updates behind
//                is k stale: the server records staleness_mean and staleness_max.
//
// A push names its step, so a worker that is out of step is an error rather than a silently wrong
// update (the trainer's per-step report keeps every rank within one step).
#include <gradsweep/sdk/services.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gradsweep::strategies {

// What a worker sends with its gradient.
struct PushHeader {
  std::int64_t step = 0;     // the step the gradient belongs to
  std::int64_t version = 0;  // the version of the parameters it was computed on
  double loss_scale = 1.0;   // the gradient is multiplied by this (mixed precision; 1 otherwise)
};

// What the server sends with the parameters.
struct PullHeader {
  std::int64_t version = 0;  // updates the server has applied, this one included
  bool applied = true;       // false: the update was skipped (gradient overflow)
  double grad_norm = 0.0;
  double loss_scale = 1.0;  // the workers take the server's scale on
};

class ParameterServerProtocol {
 public:
  static constexpr int kServer = 0;
  // Headers travel as float64 tensors of this many elements (counted in the bytes a worker moves).
  static constexpr std::int64_t kPushHeaderSize = 3, kPullHeaderSize = 4;

  ParameterServerProtocol(sdk::Communicator& comm, std::string strategy, bool async);

  bool server() const { return comm_.rank() == kServer; }
  bool async() const { return async_; }
  const std::vector<int>& workers() const { return workers_; }
  // Updates the server has applied; a worker's: the version it holds (checkpointed by the strategy).
  std::int64_t version() const { return version_; }
  void set_version(std::int64_t version) { version_ = version; }

  // Worker side: send this step's gradient (stamped with the step, the version held and `loss_scale`),
  // then receive the answer into `parameters` (sized by the caller: it knows what the answer carries).
  void push(std::int64_t step, const torch::Tensor& gradient, double loss_scale = 1.0);
  PullHeader pull(torch::Tensor& parameters);

  // Server side: what the strategy does with the pushes of one step.
  struct Handlers {
    // A push's gradient lands here: the wire's dtype and size.
    torch::Tensor incoming;
    // sync: the gradients already in the server's sum (1 when the server computes, 0 when it only
    // serves); `add` adds a worker's, then `apply_sum` applies the sum of `count` gradients.
    double own = 1;
    std::function<void(const torch::Tensor& incoming)> add;
    std::function<sdk::StepResult(double count)> apply_sum;
    // async: applies the server's own gradient (empty when it only serves), then each worker's alone, at
    // the loss scale its header names.
    std::function<sdk::StepResult()> apply_own;
    std::function<sdk::StepResult(const torch::Tensor& incoming, const PushHeader& header)> apply_push;
    // The parameters that answer the update just applied, and the loss scale the workers take on.
    std::function<torch::Tensor()> answer;
    std::function<double()> loss_scale = [] { return 1.0; };
  };
  // Serves step `step` and returns the last update's result. Records the bytes each worker moved and, in
  // async mode, the staleness, in `metrics`.
  sdk::StepResult serve(std::int64_t step, const Handlers& handlers, sdk::MetricsSink& metrics);

 private:
  PushHeader receive_push(std::int64_t step, int& worker, torch::Tensor& incoming);
  void reply(int worker, const sdk::StepResult& result, const torch::Tensor& parameters, double loss_scale);
  void count_update(const sdk::StepResult& result);

  enum Tag : int { kPushHeader = 101, kPush = 102, kPullHeader = 103, kPull = 104 };
  sdk::Communicator& comm_;
  std::string strategy_;
  bool async_;
  std::vector<int> workers_;
  std::int64_t version_ = 0;
};

}  // namespace gradsweep::strategies
