#include "parameter_server_protocol.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <utility>

namespace gradsweep::strategies {

ParameterServerProtocol::ParameterServerProtocol(sdk::Communicator& comm, std::string strategy, bool async)
    : comm_(comm), strategy_(std::move(strategy)), async_(async) {
  for (int r = kServer + 1; r < comm_.size(); ++r) workers_.push_back(r);
}

void ParameterServerProtocol::push(std::int64_t step, const torch::Tensor& gradient, double loss_scale) {
  const torch::Tensor header =
      torch::tensor({static_cast<double>(step), static_cast<double>(version_), loss_scale}, torch::kDouble);
  sdk::check(comm_.send(header, kServer, kPushHeader));
  sdk::check(comm_.send(gradient, kServer, kPush));
}

PullHeader ParameterServerProtocol::pull(torch::Tensor& parameters) {
  torch::Tensor header = torch::zeros({kPullHeaderSize}, torch::kDouble);
  sdk::check(comm_.recv(header, kServer, kPullHeader));
  sdk::check(comm_.recv(parameters, kServer, kPull));
  const auto h = header.accessor<double, 1>();
  const PullHeader answer{static_cast<std::int64_t>(h[0]), h[1] != 0.0, h[2], h[3]};
  version_ = answer.version;
  return answer;
}

// Receives one push: from `worker`, or when it is -1 from whichever worker's header comes first
// (recv_any), which `worker` then names. The body always follows from the header's sender.
PushHeader ParameterServerProtocol::receive_push(std::int64_t step, int& worker, torch::Tensor& incoming) {
  torch::Tensor header = torch::zeros({kPushHeaderSize}, torch::kDouble);
  if (worker < 0)
    sdk::check(comm_.recv_any(header, kPushHeader, &worker));
  else
    sdk::check(comm_.recv(header, worker, kPushHeader));
  const auto h = header.accessor<double, 1>();
  const PushHeader push{static_cast<std::int64_t>(h[0]), static_cast<std::int64_t>(h[1]), h[2]};
  if (push.step != step)
    throw sdk::Error("strategy '" + strategy_ + "': worker " + std::to_string(worker) + " pushed step " +
                     std::to_string(push.step) + " while the server is at step " + std::to_string(step));
  sdk::check(comm_.recv(incoming, worker, kPush));
  return push;
}

void ParameterServerProtocol::reply(int worker, const sdk::StepResult& result, const torch::Tensor& parameters,
                                    double loss_scale) {
  const torch::Tensor header = torch::tensor(
      {static_cast<double>(version_), result.applied ? 1.0 : 0.0, result.grad_norm, loss_scale}, torch::kDouble);
  sdk::check(comm_.send(header, worker, kPullHeader));
  sdk::check(comm_.send(parameters, worker, kPull));
}

// A skipped update (gradient overflow) leaves the parameters, and so their version, as they were.
void ParameterServerProtocol::count_update(const sdk::StepResult& result) {
  if (result.applied) ++version_;
}

sdk::StepResult ParameterServerProtocol::serve(std::int64_t step, const Handlers& h, sdk::MetricsSink& metrics) {
  torch::Tensor incoming = h.incoming;
  torch::Tensor answer;
  sdk::StepResult result;
  if (!async_) {
    double count = h.own;
    for (int w : workers_) {
      receive_push(step, w, incoming);
      h.add(incoming);
      ++count;
    }
    result = h.apply_sum(count);
    count_update(result);
    answer = h.answer();
    const double scale = h.loss_scale();
    for (int w : workers_) reply(w, result, answer, scale);
  } else {
    if (h.apply_own) {  // the server's own gradient first, computed on the current parameters
      result = h.apply_own();
      count_update(result);
    }
    double staleness_sum = 0, staleness_max = 0;
    for (std::size_t k = 0; k < workers_.size(); ++k) {
      int worker = -1;
      const PushHeader push = receive_push(step, worker, incoming);
      const double staleness = static_cast<double>(version_ - push.version);
      staleness_sum += staleness;
      staleness_max = std::max(staleness_max, staleness);
      result = h.apply_push(incoming, push);
      count_update(result);
      answer = h.answer();
      reply(worker, result, answer, h.loss_scale());
    }
    if (!workers_.empty()) {
      metrics.record("staleness_mean", staleness_sum / static_cast<double>(workers_.size()));
      metrics.record("staleness_max", staleness_max);
    }
  }
  // What each worker moved this step, headers included (they are a few bytes).
  metrics.record("ps_push_bytes_per_worker",
                 static_cast<double>(incoming.numel() * incoming.element_size() + kPushHeaderSize * 8));
  if (answer.defined())
    metrics.record("ps_pull_bytes_per_worker",
                   static_cast<double>(answer.numel() * answer.element_size() + kPullHeaderSize * 8));
  return result;
}

}  // namespace gradsweep::strategies
