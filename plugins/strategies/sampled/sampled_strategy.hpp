#pragma once
// `sampled`: data parallelism with a sampled softmax and row-sparse gradient exchange, after Xiao et al.
// 2017 ("Fast Parallel Training of Neural Language Models"; see docs/strategies.md for the reading).
//
// Each step the softmax is restricted to the global batch's target words plus K sampled negatives
// (VocabularySampler: the same on every rank, from the step alone). Then only the rows of the output
// matrix for those words, and of the input embedding for the batch's input words, have a gradient: the
// strategy exchanges those rows (RowSparseLayout) plus the other, dense parameters' gradients, and
// nothing else. Evaluation always uses the full softmax (the trainer never restricts it).
//
//   transport: ring   allreduce of the packed rows (gradsweep's ring, hierarchical or the backend's:
//                     `algorithm`);
//                     every rank applies the same update, as `ring` does.
//   transport: ps     rank 0 is a parameter server, `mode` sync or async as in `ps`. Workers push packed
//                     rows; the server answers with parameters, and only with the rows that can have
//                     changed when the optimizer is row-local (SGD without momentum or weight decay: a
//                     row without gradient does not move); with AdamW every row moves, so the answer is
//                     dense.
//   exchange: dense   sends the whole (mostly zero) gradients instead: the reference the sparse exchange
//                     must match exactly, and the dense-equivalent byte count.
#include "row_sparse_layout.hpp"
#include "algorithm_option.hpp"
#include "parameter_server_protocol.hpp"
#include "vocabulary_sampler.hpp"

#include <gradsweep/sdk/capabilities.hpp>
#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <array>
#include <string>
#include <vector>

namespace gradsweep::strategies {

inline constexpr std::array<sdk::OptionDecl, 8> kSampledOptions{{
    {"negatives", sdk::OptionType::Int, "1024",
     "K: negatives sampled per step besides the global batch's targets (0..vocab_size)"},
    {"distribution", sdk::OptionType::String, "unigram",
     "unigram: (count+1)^alpha over the training shard; uniform: every word alike", "unigram|uniform"},
    {"alpha", sdk::OptionType::Float, "0.75", "exponent of the unigram distribution (word2vec's 0.75)"},
    {"seed", sdk::OptionType::Int, "0", "seed of the per-step draw (mixed with the step number)"},
    {"transport", sdk::OptionType::String, "ring", "ring: allreduce of the rows; ps: a parameter server on rank 0",
     "ring|ps"},
    {"algorithm", sdk::OptionType::String, "auto",
     "auto: ring on MPI, native on NCCL; transport ring: gradsweep's ring, its hierarchical allreduce, or the "
     "backend's native allreduce",
     kAlgorithmChoices},
    {"mode", sdk::OptionType::String, "async", "transport ps: sync or async, as in strategy ps", "sync|async"},
    {"exchange", sdk::OptionType::String, "sparse",
     "sparse: only the rows a step touches; dense: whole gradients (the reference)", "sparse|dense"},
}};

class SampledStrategy final : public sdk::Strategy {
 public:
  // The sampled softmax is not the full one, so never `single`'s run; every rank computes. Resumes at any
  // world size (on_load_resharded).
  static constexpr auto kCapabilities = sdk::StrategyCapabilities{}.vocabulary().agreeing().resharding();
  // Refuses a model without output subsets, more negatives than words, and what the transport needs.
  static void check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer);

  explicit SampledStrategy(const sdk::PluginContext& context);

 protected:
  void on_setup(const sdk::StrategySetup& setup) override;
  sdk::OutputVocabulary on_output_vocabulary(const sdk::StepBatch& batch) override;
  void on_begin_step(const sdk::StepContext& step) override;
  void on_end_backward() override;
  sdk::StepResult on_update(const sdk::StepContext& step) override;
  void on_save_state(torch::serialize::OutputArchive& archive) override;
  void on_load_state(torch::serialize::InputArchive& archive) override;
  void on_load_resharded(sdk::SavedStates& saved) override;

 private:
  // The rows a buffer of this step carries: the touched ones, or all of them (exchange: dense).
  const torch::Tensor& exchanged_rows() const { return sparse_ ? rows_ : all_rows_; }
  torch::Tensor gradient_buffer() const;

  // transport: ps (sampled_parameter_server.cpp)
  bool server() const { return protocol_.server(); }
  void push();
  sdk::StepResult serve(const sdk::StepContext& step);
  sdk::StepResult apply(const torch::Tensor& grads, double count, const sdk::StepContext& step);
  // The rows of a parameter answer: those that can have changed since the worker's last answer.
  torch::Tensor pull_rows() const;
  sdk::StepResult receive_parameters();

  sdk::Communicator& comm_;
  bool ps_, async_, sparse_;
  ParameterServerProtocol protocol_;  // transport ps
  VocabularySampler sampler_;
  RowSparseLayout layout_;
  sdk::LocalOptimizer optimizer_;  // with transport ps, stepped on the server only
  bool row_local_optimizer_ = false;
  torch::Tensor all_rows_;   // 0..V-1
  torch::Tensor rows_;       // this step's touched rows, ascending
  torch::Tensor last_rows_;  // the previous step's (transport ps, async); undefined after a (re)start
  torch::Tensor grads_;      // this rank's packed gradient
  std::int64_t step_ = 0;
  std::int64_t vocab_size_ = 0;
};

}  // namespace gradsweep::strategies
