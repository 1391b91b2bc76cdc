#include "sampled_strategy.hpp"

#include "algorithm_option.hpp"

#include <gradsweep/sdk/model_optimizer_state.hpp>

#include <torch/torch.h>

#include <initializer_list>
#include <string>

namespace gradsweep::strategies {
namespace {

const std::string kName = "sampled";

}  // namespace

SampledStrategy::SampledStrategy(const sdk::PluginContext& context)
    : Strategy(context),
      comm_(sdk::collective::with_algorithm(context.comm,
                                            algorithm_option(context.options, context.comm.features(), kName))),
      // The host has checked every choice (kSampledOptions).
      ps_(context.options.text("transport") == "ps"),
      async_(context.options.text("mode") == "async"),
      sparse_(context.options.text("exchange") == "sparse"),
      protocol_(comm_, kName, async_) {}

void SampledStrategy::check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer) {
  const sdk::Options& options = *facts.options;
  if (facts.model != nullptr && !facts.model->supports_output_subset) {
    answer.about = "model";
    answer.refusal = "strategy '" + kName + "' needs a model that can restrict its softmax to some rows; '" +
                     facts.model->architecture + "' cannot (ModelInfo::supports_output_subset)";
    return;
  }
  const std::int64_t k = options.integer("negatives");
  if (facts.model != nullptr && (k < 0 || k > facts.model->vocab_size)) {
    answer.about = "negatives";
    answer.refusal = "strategy '" + kName + "': negatives " + std::to_string(k) + " must be in [0, vocab_size " +
                     std::to_string(facts.model->vocab_size) + "]";
    return;
  }
  const bool ps = options.text("transport") == "ps", async = options.text("mode") == "async";
  if (!ps) {
    check_algorithm_plan(facts, answer, kName);
    return;
  }
  if (async && (facts.backend_features & sdk::kRecvAny) == 0) {
    answer.about = "mode";
    answer.refusal = "strategy '" + kName + "': transport ps in mode async needs recv_any, which the " + facts.backend +
                     " backend does not offer; use runtime.comm: mpi";
    return;
  }
  if (async) answer.capabilities = answer.capabilities.agreeing(false);
}

void SampledStrategy::on_setup(const sdk::StrategySetup& setup) {
  const sdk::ModelInfo& model = setup.model;
  if (!model.supports_output_subset)
    throw sdk::Error("strategy '" + kName + "' needs a model that can restrict its softmax to some rows; '" +
                     model.architecture + "' cannot (ModelInfo::supports_output_subset)");
  vocab_size_ = model.vocab_size;
  const std::int64_t k = context().options.integer("negatives");
  if (k < 0 || k > vocab_size_)
    throw sdk::Error("strategy '" + kName + "': negatives " + std::to_string(k) + " must be in [0, vocab_size " +
                     std::to_string(vocab_size_) + "]");
  // A token matrix may have more rows than ids (padded to a multiple for the GEMM): the steps touch ids only.
  for (const auto& p : setup.parameters)
    if (p.row_sparse && (p.tensor.dim() == 0 || p.tensor.size(0) < vocab_size_))
      throw sdk::Error("strategy '" + kName + "': row-sparse parameter '" + p.name + "' has " +
                       std::to_string(p.tensor.dim() == 0 ? 0 : p.tensor.size(0)) + " rows, fewer than vocab_size " +
                       std::to_string(vocab_size_));

  torch::Tensor weights;
  if (context().options.text("distribution") == "uniform") {
    weights = torch::ones({vocab_size_}, torch::kDouble);
  } else {
    if (!setup.token_counts.defined() || setup.token_counts.numel() != vocab_size_)
      throw sdk::Error("strategy '" + kName +
                       "': distribution unigram needs the training shard's token counts, "
                       "which this host did not pass (SDK 1.2 hosts do)");
    weights = VocabularySampler::unigram_weights(setup.token_counts, context().options.number("alpha"));
  }
  sampler_ = VocabularySampler(weights, k, static_cast<std::uint64_t>(context().options.integer("seed")));

  layout_ = RowSparseLayout(setup.parameters);
  optimizer_.setup(setup);
  const sdk::OptimizerSpec& o = setup.optimizer;
  row_local_optimizer_ = o.kind == sdk::OptimizerSpec::Kind::SGD && o.momentum == 0.0 && o.weight_decay == 0.0;
  all_rows_ = torch::arange(vocab_size_, torch::TensorOptions().dtype(torch::kLong).device(context().device));
  if (ps_ && server())
    context().log.info(std::string("server on rank 0, mode ") + (async_ ? "async" : "sync") + ", parameters answered " +
                       (row_local_optimizer_ && sparse_ ? "by rows (row-local SGD)" : "dense"));
}

sdk::OutputVocabulary SampledStrategy::on_output_vocabulary(const sdk::StepBatch& batch) {
  sdk::OutputVocabulary vocabulary = sampler_.sample(batch.step, batch.targets);
  // Rows with a gradient this step, on any rank: the inputs' embedding rows and the scored output rows.
  rows_ = std::get<0>(torch::_unique(torch::cat({batch.inputs.flatten().cpu(), vocabulary.rows}), /*sorted=*/true))
              .to(context().device);
  context().metrics.record("sampled_vocabulary", static_cast<double>(vocabulary.rows.numel()));
  context().metrics.record("exchanged_rows", static_cast<double>(exchanged_rows().numel()));
  return vocabulary;
}

void SampledStrategy::on_begin_step(const sdk::StepContext& step) {
  step_ = step.step;
  rows_ = torch::Tensor();
  optimizer_.zero_grad();
}

torch::Tensor SampledStrategy::gradient_buffer() const {
  if (!rows_.defined())
    throw sdk::Error("strategy '" + kName + "': no output vocabulary for step " + std::to_string(step_) +
                     " (the host must call output_vocabulary: SDK 1.2)");
  return torch::empty({layout_.numel(exchanged_rows().numel())},
                      torch::TensorOptions().dtype(torch::kFloat).device(context().device));
}

void SampledStrategy::on_end_backward() {
  grads_ = gradient_buffer();
  layout_.pack_gradients(optimizer_.params(), exchanged_rows(), grads_);
  const double bytes = static_cast<double>(grads_.numel() * grads_.element_size());
  context().metrics.record("gradient_bytes", bytes);
  context().metrics.record("dense_gradient_bytes", static_cast<double>(layout_.dense_numel() * grads_.element_size()));
  if (ps_)
    push();
  else
    sdk::check(comm_.allreduce(grads_, sdk::ReduceOp::Sum));
}

sdk::StepResult SampledStrategy::on_update(const sdk::StepContext& step) {
  if (ps_) return server() ? serve(step) : receive_parameters();
  layout_.unpack_gradients(grads_, exchanged_rows(), 1.0 / comm_.size(), optimizer_.params());
  return optimizer_.step(step);
}

void SampledStrategy::on_save_state(torch::serialize::OutputArchive& archive) {
  if (!ps_ || server()) optimizer_.save(archive);
  archive.write("sampled_version", torch::tensor({protocol_.version()}, torch::kLong));
}

void SampledStrategy::on_load_state(torch::serialize::InputArchive& archive) {
  if (!ps_ || server()) optimizer_.load(archive);
  torch::Tensor version;
  archive.read("sampled_version", version);
  protocol_.set_version(version.item<std::int64_t>());
  last_rows_ = torch::Tensor();  // what workers hold is known again only after a dense answer
}

// From a job of another world size: everything saved comes from old rank 0. With transport ring every rank
// held the same optimizer; with transport ps rank 0 is the server at every size and the only one that steps
// its optimizer, and the workers start from its parameters (the host restored old rank 0's everywhere), at
// its version, with a dense first answer as after any restart. The per-step vocabulary draw depends on the
// step and the global batch only, not on the number of ranks.
void SampledStrategy::on_load_resharded(sdk::SavedStates& saved) {
  torch::serialize::InputArchive& first = sdk::saved_state(saved, 0);
  if (!ps_ || server())
    sdk::ModelOptimizerState(saved, {0}, optimizer_.spec(), optimizer_.params()).restore(optimizer_.sliced());
  torch::Tensor version;
  first.read("sampled_version", version);
  protocol_.set_version(version.item<std::int64_t>());
  last_rows_ = torch::Tensor();
}

}  // namespace gradsweep::strategies
