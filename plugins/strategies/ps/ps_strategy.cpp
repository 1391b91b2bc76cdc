#include "ps_strategy.hpp"

#include <torch/torch.h>

#include <algorithm>

namespace gradsweep::strategies {
namespace {

// Message tags: a header and its body always travel as a pair from the same rank.
enum Tag : int { kPushHeader = 101, kPush = 102, kPullHeader = 103, kPull = 104 };

}  // namespace

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
  if (async) answer.capabilities = answer.capabilities.exact(false).agreeing(false);
}

PsStrategy::PsStrategy(const sdk::PluginContext& context, MixedPrecision precision, const char* name)
    : Strategy(context), name_(name), amp_(precision), comm_(context.comm) {
  async_ = context.options.text("mode") == "async";  // sync or async: the host checked the choices
  const bool server_computes = context.options.flag("server_computes");
  if (!server_computes && comm_.size() == 1)
    throw sdk::Error("strategy '" + name_ + "': server_computes: false needs at least one worker (2 or more ranks)");
  computes_ = !server() || server_computes;
  for (int r = 1; r < comm_.size(); ++r) workers_.push_back(r);
}

void PsStrategy::on_setup(const sdk::StrategySetup& setup) {
  const std::vector<torch::Tensor> params = sdk::tensors_of(setup.parameters);
  layout_ = FlatLayout(params);
  optimizer_.setup(setup);  // the workers' copy stays unused: only the server steps
  const auto options = params.front().options();
  push_ = torch::zeros({layout_.numel()}, options.dtype(amp_.comm_dtype()));
  pull_ = torch::zeros({layout_.numel()}, options.dtype(torch::kFloat));
  header_ = torch::zeros({4}, torch::kDouble);
  if (server()) {
    sum_ = torch::zeros({layout_.numel()}, options.dtype(torch::kFloat));
    context().log.info("server on rank 0 for " + std::to_string(workers_.size()) + " workers, mode " +
                       (async_ ? "async" : "sync") + (computes_ ? ", computing too" : ", serving only"));
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
  if (async_) {
    torch::Tensor header = torch::tensor({static_cast<double>(version_), amp_.loss_scale()}, torch::kDouble);
    sdk::check(comm_.send(header, kServer, kPushHeader));
  }
  sdk::check(comm_.send(push_, kServer, kPush));
}

sdk::StepResult PsStrategy::on_update(const sdk::StepContext& step) {
  if (!server()) return receive_parameters();
  const sdk::StepResult result = async_ ? serve_async(step) : serve_sync(step);
  // What each worker moved this step, headers included (they are a few bytes).
  const double header_bytes = async_ ? 2 * sizeof(double) : 0;
  context().metrics.record("ps_push_bytes_per_worker",
                           static_cast<double>(push_.numel() * push_.element_size()) + header_bytes);
  context().metrics.record("ps_pull_bytes_per_worker",
                           static_cast<double>(pull_.numel() * pull_.element_size()) + 4 * sizeof(double));
  context().metrics.record("optimizer_state_bytes",
                           static_cast<double>(sdk::optimizer_state_bytes(optimizer_.optimizer())));
  return result;
}

sdk::StepResult PsStrategy::serve_sync(const sdk::StepContext& step) {
  double count = 0;
  sum_.zero_();
  if (computes_) {
    layout_.pack_gradients(optimizer_.params(), sum_);
    if (amp_.enabled()) amp_.maybe_inject_overflow(step_, comm_.rank(), sum_);
    count = 1;
  }
  // In rank order, so that the sum is the same every run.
  for (int w : workers_) {
    sdk::check(comm_.recv(push_, w, kPush));
    sum_.add_(push_);
    ++count;
  }
  const sdk::StepResult result = apply(sum_, count, amp_.loss_scale(), step);
  layout_.pack_parameters(optimizer_.params(), pull_);
  for (int w : workers_) reply(w, result);
  return result;
}

sdk::StepResult PsStrategy::serve_async(const sdk::StepContext& step) {
  sdk::StepResult last;
  double staleness_sum = 0, staleness_max = 0;
  if (computes_) {  // the server's own gradient, computed on the current parameters
    layout_.pack_gradients(optimizer_.params(), sum_);
    if (amp_.enabled()) amp_.maybe_inject_overflow(step_, comm_.rank(), sum_);
    last = apply(sum_, 1, amp_.loss_scale(), step);
  }
  // One gradient from each worker per step, taken in the order they arrive.
  for (std::size_t k = 0; k < workers_.size(); ++k) {
    torch::Tensor header = torch::zeros({2}, torch::kDouble);
    int worker = -1;
    sdk::check(comm_.recv_any(header, kPushHeader, &worker));
    sdk::check(comm_.recv(push_, worker, kPush));
    const double staleness = static_cast<double>(version_) - header[0].item<double>();
    staleness_sum += staleness;
    staleness_max = std::max(staleness_max, staleness);
    sum_.copy_(push_);
    last = apply(sum_, 1, header[1].item<double>(), step);
    layout_.pack_parameters(optimizer_.params(), pull_);
    reply(worker, last);
  }
  if (!workers_.empty()) {
    context().metrics.record("staleness_mean", staleness_sum / static_cast<double>(workers_.size()));
    context().metrics.record("staleness_max", staleness_max);
  }
  return last;
}

sdk::StepResult PsStrategy::apply(const torch::Tensor& grads, double count, double scale,
                                  const sdk::StepContext& step) {
  if (amp_.enabled() &&
      !amp_.finish_step(MixedPrecision::has_overflow(grads), step.step, context().log, context().metrics))
    return {false, 0.0};
  layout_.unpack_gradients(grads, 1.0 / (count * scale), optimizer_.params());
  const sdk::StepResult result = optimizer_.step(step);  // the server holds the whole gradient: local norm
  ++version_;
  return result;
}

void PsStrategy::reply(int worker, const sdk::StepResult& result) {
  torch::Tensor header = torch::tensor({static_cast<double>(version_), result.applied ? 1.0 : 0.0, result.grad_norm,
                                        amp_.loss_scale()},
                                       torch::kDouble);
  sdk::check(comm_.send(header, worker, kPullHeader));
  sdk::check(comm_.send(pull_, worker, kPull));
}

sdk::StepResult PsStrategy::receive_parameters() {
  sdk::check(comm_.recv(header_, kServer, kPullHeader));
  sdk::check(comm_.recv(pull_, kServer, kPull));
  layout_.unpack_parameters(pull_, optimizer_.params());
  const auto h = header_.accessor<double, 1>();
  version_ = static_cast<std::int64_t>(h[0]);
  amp_.set_loss_scale(h[3]);
  if (h[1] == 0.0) context().log.warn("step " + std::to_string(step_) + ": update skipped by the server (gradient overflow)");
  return {h[1] != 0.0, h[2]};
}

void PsStrategy::save(torch::serialize::OutputArchive& archive) {
  if (server()) optimizer_.save(archive);
  archive.write("ps_version", torch::tensor({version_}, torch::kLong));
  if (amp_.enabled()) amp_.save(archive);
}

void PsStrategy::load(torch::serialize::InputArchive& archive) {
  if (server()) optimizer_.load(archive);
  torch::Tensor version;
  archive.read("ps_version", version);
  version_ = version.item<std::int64_t>();
  if (amp_.enabled()) amp_.load(archive);
}

}  // namespace gradsweep::strategies
