// transport: ps of the `sampled` strategy. Rank 0 serves; every rank computes. The protocol is `ps`'s
// (common/parameter_server_protocol.hpp) with packed rows instead of whole gradients, so the server
// must know which rows a push carries: they follow from the step, which every push names.
#include "sampled_strategy.hpp"

#include <torch/torch.h>

#include <string>

namespace gradsweep::strategies {

void SampledStrategy::push() {
  if (server()) return;  // the server's own gradient joins in serve()
  protocol_.push(step_, grads_);
}

sdk::StepResult SampledStrategy::serve(const sdk::StepContext& step) {
  ParameterServerProtocol::Handlers h;
  h.incoming = torch::empty_like(grads_);
  h.own = 1;  // every rank computes
  h.add = [&](const torch::Tensor& incoming) { grads_.add_(incoming); };
  h.apply_sum = [&](double count) { return apply(grads_, count, step); };
  h.apply_own = [&] { return apply(grads_, 1, step); };
  h.apply_push = [&](const torch::Tensor& incoming, const PushHeader&) { return apply(incoming, 1, step); };
  h.answer = [&] {
    const torch::Tensor rows = pull_rows();
    torch::Tensor body = torch::empty({layout_.numel(rows.numel())}, grads_.options());
    layout_.pack_parameters(optimizer_.params(), rows, body);
    return body;
  };
  const sdk::StepResult result = protocol_.serve(step_, h, context().metrics);
  last_rows_ = rows_;
  return result;
}

sdk::StepResult SampledStrategy::apply(const torch::Tensor& grads, double count, const sdk::StepContext& step) {
  layout_.unpack_gradients(grads, exchanged_rows(), 1.0 / count, optimizer_.params());
  return optimizer_.step(step);  // the server holds the whole gradient: local norm
}

torch::Tensor SampledStrategy::pull_rows() const {
  // Dense when rows other than this step's may have moved (AdamW's moments, weight decay), or when what
  // the worker holds is not known (first step of a run). Async answers also carry the previous step's
  // rows: other workers' updates to them landed after this worker's last answer.
  if (!sparse_ || !row_local_optimizer_ || !last_rows_.defined()) return all_rows_;
  if (!async_) return rows_;
  return std::get<0>(torch::_unique(torch::cat({last_rows_, rows_}), /*sorted=*/true));
}

sdk::StepResult SampledStrategy::receive_parameters() {
  const torch::Tensor rows = pull_rows();
  torch::Tensor body = torch::empty({layout_.numel(rows.numel())}, grads_.options());
  const PullHeader answer = protocol_.pull(body);
  layout_.unpack_parameters(body, rows, optimizer_.params());
  last_rows_ = rows_;
  return {answer.applied, answer.grad_norm};
}

}  // namespace gradsweep::strategies
