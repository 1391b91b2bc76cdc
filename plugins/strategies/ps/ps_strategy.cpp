#include "ps_strategy.hpp"

#include <gradsweep/sdk/model_optimizer_state.hpp>

#include <torch/torch.h>

namespace gradsweep::strategies {
void PsStrategy::check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer, const char* name) {
  const sdk::Options& options = *facts.options;
  const bool async = options.text("mode") == "async";
  const bool server_computes = options.flag("server_computes");
  if (!server_computes && facts.world_size == 1) {
    answer.about = "server_computes";
    answer.refusal = std::string("strategy '") + name + "': server_computes: false needs at least one worker, " +
                     "but the job has 1 rank";
    return;
  }
  if (async && (facts.backend_features & sdk::kRecvAny) == 0) {
    answer.about = "mode";
    answer.refusal = std::string("strategy '") + name + "': mode async serves gradients in the order they arrive " +
                     "(recv_any), which the " + facts.backend + " backend does not offer; use runtime.comm: mpi";
    return;
  }
  answer.computing_ranks = server_computes ? facts.world_size : facts.world_size - 1;
  // A gradient computed on older parameters updates the newer ones: no longer single's run, and the
  // workers hold parameters of different ages.
  if (async) answer.capabilities = answer.capabilities.exact(false).agreeing(false).deterministic_runs(false);
}

PsStrategy::PsStrategy(const sdk::PluginContext& context, MixedPrecision precision, const char* name)
    : Strategy(context),
      name_(name),
      amp_(precision),
      comm_(context.comm),
      // sync or async: the host checked the choices
      protocol_(context.comm, name, context.options.text("mode") == "async") {
  const bool server_computes = context.options.flag("server_computes");
  if (!server_computes && comm_.size() == 1)
    throw sdk::Error("strategy '" + name_ + "': server_computes: false needs at least one worker (2 or more ranks)");
  computes_ = !server() || server_computes;
}

void PsStrategy::on_setup(const sdk::StrategySetup& setup) {
  const std::vector<torch::Tensor> params = sdk::tensors_of(setup.parameters);
  layout_ = FlatLayout(params);
  optimizer_.setup(setup);  // the workers' copy stays unused: only the server steps
  const auto options = params.front().options();
  push_ = torch::zeros({layout_.numel()}, options.dtype(amp_.comm_dtype()));
  pull_ = torch::zeros({layout_.numel()}, options.dtype(torch::kFloat));
  if (server()) {
    sum_ = torch::zeros({layout_.numel()}, options.dtype(torch::kFloat));
    context().log.info("server on rank 0 for " + std::to_string(protocol_.workers().size()) + " workers, mode " +
                       (protocol_.async() ? "async" : "sync") + (computes_ ? ", computing too" : ", serving only"));
  }
}

void PsStrategy::on_begin_step(const sdk::StepContext& step) {
  step_ = step.step;
  optimizer_.zero_grad();
}

void PsStrategy::on_end_backward() {
  if (server()) return;  // the server's own gradient joins in on_update
  layout_.pack_gradients(optimizer_.params(), push_);
  if (amp_.enabled()) amp_.maybe_inject_overflow(step_, comm_.rank(), push_);
  protocol_.push(step_, push_, amp_.loss_scale());
}

void PsStrategy::pack_own_gradient() {
  layout_.pack_gradients(optimizer_.params(), sum_);
  if (amp_.enabled()) amp_.maybe_inject_overflow(step_, comm_.rank(), sum_);
}

sdk::StepResult PsStrategy::on_update(const sdk::StepContext& step) {
  if (!server()) return receive_parameters();
  ParameterServerProtocol::Handlers h;
  h.incoming = push_;
  if (!protocol_.async()) {
    sum_.zero_();
    if (computes_) pack_own_gradient();
    h.own = computes_ ? 1 : 0;
  } else if (computes_) {
    h.apply_own = [&] {
      pack_own_gradient();
      return apply(sum_, 1, amp_.loss_scale(), step);
    };
  }
  h.add = [&](const torch::Tensor& incoming) { sum_.add_(incoming); };
  h.apply_sum = [&](double count) { return apply(sum_, count, amp_.loss_scale(), step); };
  h.apply_push = [&](const torch::Tensor& incoming, const PushHeader& header) {
    sum_.copy_(incoming);
    return apply(sum_, 1, header.loss_scale, step);
  };
  h.answer = [&] {
    layout_.pack_parameters(optimizer_.params(), pull_);
    return pull_;
  };
  h.loss_scale = [&] { return amp_.loss_scale(); };
  const sdk::StepResult result = protocol_.serve(step_, h, context().metrics);
  context().metrics.record("optimizer_state_bytes",
                           static_cast<double>(sdk::optimizer_state_bytes(optimizer_.optimizer())));
  return result;
}

sdk::StepResult PsStrategy::apply(const torch::Tensor& grads, double count, double scale,
                                  const sdk::StepContext& step) {
  if (amp_.enabled() &&
      !amp_.finish_step(MixedPrecision::has_overflow(grads), step.step, context().log, context().metrics))
    return {false, 0.0};
  layout_.unpack_gradients(grads, 1.0 / (count * scale), optimizer_.params());
  return optimizer_.step(step);  // the server holds the whole gradient: local norm
}

sdk::StepResult PsStrategy::receive_parameters() {
  const PullHeader answer = protocol_.pull(pull_);
  layout_.unpack_parameters(pull_, optimizer_.params());
  amp_.set_loss_scale(answer.loss_scale);
  if (!answer.applied)
    context().log.warn("step " + std::to_string(step_) + ": update skipped by the server (gradient overflow)");
  return {answer.applied, answer.grad_norm};
}

void PsStrategy::on_save_state(torch::serialize::OutputArchive& archive) {
  if (server()) optimizer_.save(archive);
  archive.write("ps_version", torch::tensor({protocol_.version()}, torch::kLong));
  if (amp_.enabled()) amp_.save(archive);
}

void PsStrategy::on_load_state(torch::serialize::InputArchive& archive) {
  if (server()) optimizer_.load(archive);
  torch::Tensor version;
  archive.read("ps_version", version);
  protocol_.set_version(version.item<std::int64_t>());
  if (amp_.enabled()) amp_.load(archive);
}

// From a job of another world size. The server is rank 0 at every size (ParameterServerProtocol::kServer),
// and all that depends on the job is the server's: its optimizer goes from old rank 0 to new rank 0 (the
// workers' copy stays unused), and every rank takes its version and loss scale (the workers adopt the
// server's anyway). The host restored old rank 0's parameters, the server's master copy, on every rank, so
// the workers start from the parameters of that version: in mode async too, where old workers held older
// ones. server_computes changes only whether rank 0 computes and so how the batch is split (check_plan's
// computing_ranks), nothing saved.
void PsStrategy::on_load_resharded(sdk::SavedStates& saved) {
  torch::serialize::InputArchive& server_state = sdk::saved_state(saved, ParameterServerProtocol::kServer);
  if (server())
    sdk::ModelOptimizerState(saved, {ParameterServerProtocol::kServer}, optimizer_.spec(), optimizer_.params())
        .restore(optimizer_.sliced());
  torch::Tensor version;
  server_state.read("ps_version", version);
  protocol_.set_version(version.item<std::int64_t>());
  if (amp_.enabled()) amp_.load(server_state);
}

}  // namespace gradsweep::strategies
