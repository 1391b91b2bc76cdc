// transport: ps of the `sampled` strategy. Rank 0 serves; every rank computes. The protocol is `ps`'s
// (strategies/ps) with packed rows instead of whole gradients, so the server must know which rows a
// push carries: they follow from the step, and the header names the step so that a mismatch is an
// error, not a silently wrong update. The trainer's per-step report keeps all ranks within one step.
#include "sampled_strategy.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <string>

namespace gradsweep::strategies {
namespace {

enum Tag : int { kPushHeader = 111, kPush = 112, kPullHeader = 113, kPull = 114 };

}  // namespace

void SampledStrategy::push() {
  if (server()) return;  // the server's own gradient joins in serve()
  torch::Tensor header = torch::tensor({static_cast<double>(step_), static_cast<double>(version_)}, torch::kDouble);
  sdk::check(comm_.send(header, kServer, kPushHeader));
  sdk::check(comm_.send(grads_, kServer, kPush));
}

sdk::StepResult SampledStrategy::serve(const sdk::StepContext& step) {
  torch::Tensor incoming = torch::empty_like(grads_);
  double staleness_sum = 0, staleness_max = 0;
  auto check_header = [&](const torch::Tensor& header, int worker) {
    const auto pushed = static_cast<std::int64_t>(header[0].item<double>());
    if (pushed != step_)
      throw sdk::Error("strategy 'sampled': worker " + std::to_string(worker) + " pushed step " +
                       std::to_string(pushed) + " while the server is at step " + std::to_string(step_));
    const double staleness = static_cast<double>(version_) - header[1].item<double>();
    staleness_sum += staleness;
    staleness_max = std::max(staleness_max, staleness);
  };
  const int workers = comm_.size() - 1;
  sdk::StepResult result;
  if (!async_) {
    // Rank order, so the sum is the same every run.
    for (int w = 1; w <= workers; ++w) {
      torch::Tensor header = torch::zeros({2}, torch::kDouble);
      sdk::check(comm_.recv(header, w, kPushHeader));
      check_header(header, w);
      sdk::check(comm_.recv(incoming, w, kPush));
      grads_.add_(incoming);
    }
    result = apply(grads_, static_cast<double>(comm_.size()), step);
    for (int w = 1; w <= workers; ++w) reply(w, result);
  } else {
    // The server's gradient first, then each worker's alone, in the order they arrive.
    result = apply(grads_, 1, step);
    for (int k = 0; k < workers; ++k) {
      torch::Tensor header = torch::zeros({2}, torch::kDouble);
      int worker = -1;
      sdk::check(comm_.recv_any(header, kPushHeader, &worker));
      check_header(header, worker);
      sdk::check(comm_.recv(incoming, worker, kPush));
      result = apply(incoming, 1, step);
      reply(worker, result);
    }
    if (workers > 0) {
      context().metrics.record("staleness_mean", staleness_sum / workers);
      context().metrics.record("staleness_max", staleness_max);
    }
  }
  context().metrics.record("ps_push_bytes_per_worker", static_cast<double>(grads_.numel() * grads_.element_size()));
  context().metrics.record("ps_pull_bytes_per_worker",
                           static_cast<double>(layout_.numel(pull_rows().numel()) * grads_.element_size()));
  last_rows_ = rows_;
  return result;
}

sdk::StepResult SampledStrategy::apply(const torch::Tensor& grads, double count, const sdk::StepContext& step) {
  layout_.unpack_gradients(grads, exchanged_rows(), 1.0 / count, optimizer_.params());
  const sdk::StepResult result = optimizer_.step(step);  // the server holds the whole gradient: local norm
  ++version_;
  return result;
}

torch::Tensor SampledStrategy::pull_rows() const {
  // Dense when rows other than this step's may have moved (AdamW's moments, weight decay), or when what
  // the worker holds is not known (first step of a run). Async answers also carry the previous step's
  // rows: other workers' updates to them landed after this worker's last answer.
  if (!sparse_ || !row_local_optimizer_ || !last_rows_.defined()) return all_rows_;
  if (!async_) return rows_;
  return std::get<0>(torch::_unique(torch::cat({last_rows_, rows_}), /*sorted=*/true));
}

void SampledStrategy::reply(int worker, const sdk::StepResult& result) {
  torch::Tensor header =
      torch::tensor({static_cast<double>(version_), result.applied ? 1.0 : 0.0, result.grad_norm}, torch::kDouble);
  const torch::Tensor rows = pull_rows();
  torch::Tensor body = torch::empty({layout_.numel(rows.numel())}, grads_.options());
  layout_.pack_parameters(optimizer_.params(), rows, body);
  sdk::check(comm_.send(header, worker, kPullHeader));
  sdk::check(comm_.send(body, worker, kPull));
}

sdk::StepResult SampledStrategy::receive_parameters() {
  torch::Tensor header = torch::zeros({3}, torch::kDouble);
  sdk::check(comm_.recv(header, kServer, kPullHeader));
  const torch::Tensor rows = pull_rows();
  torch::Tensor body = torch::empty({layout_.numel(rows.numel())}, grads_.options());
  sdk::check(comm_.recv(body, kServer, kPull));
  layout_.unpack_parameters(body, rows, optimizer_.params());
  last_rows_ = rows_;
  version_ = static_cast<std::int64_t>(header[0].item<double>());
  return {header[1].item<double>() != 0.0, header[2].item<double>()};
}

}  // namespace gradsweep::strategies
