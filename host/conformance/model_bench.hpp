#pragma once
// The workbench of `gradsweep check model`: a model plugin built on the CPU on one local rank, as planning
// builds it (experiment/model_facts), each instance after torch::manual_seed(seed) as the trainer seeds
// it, and the batches, losses and gradients the model checks (model_properties) compare.
#include "comm/core/host_communicator.hpp"
#include "plugins/plugin_instance.hpp"
#include "services/logging.hpp"
#include "services/step_metrics.hpp"

#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/options.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gradsweep::conformance {

class ModelBench {
 public:
  // `options` are the model's validated options; `seed` is the check's train.seed: instances, batches
  // and dropout keys all derive from it.
  ModelBench(const plugins::PluginRecord& record, sdk::Options options, std::uint64_t seed);

  // A fresh instance, its parameters drawn after torch::manual_seed(seed).
  std::unique_ptr<plugins::ModelInstance> build(std::uint64_t seed) const;
  std::unique_ptr<plugins::ModelInstance> build() const { return build(seed_); }

  const plugins::PluginRecord& record() const { return *record_; }
  std::uint64_t seed() const { return seed_; }

 private:
  const plugins::PluginRecord* record_;
  sdk::Options options_;  // the instances' PluginContext refers to it and to the services below
  std::unique_ptr<comm::HostCommunicator> comm_;
  mutable services::PluginLogger logger_;
  mutable services::StepMetrics metrics_;
  std::uint64_t seed_;
};

// What every model check is given: the bench, the model's info (from an instance built with the bench's
// seed), the global batch it compares splits of, and the dropout option the check set, if any.
struct ModelCheckContext {
  const ModelBench* bench = nullptr;
  sdk::ModelInfo info{};
  sdk::Batch batch{};
  std::string dropout_key{};      // the option that sets the model's dropout (--dropout-key)
  bool dropout_declared = false;  // the model declares it (a Float option of that name)
  std::string dropout_note{};     // "dropout=0.1 set by the check", or "" when the options were the user's
};

sdk::ModelInfo info_of(const plugins::ModelInstance& model);
std::vector<sdk::Parameter> parameters_of(const plugins::ModelInstance& model);
std::vector<sdk::NamedTensor> buffers_of(const plugins::ModelInstance& model);

// `samples` sequences of `seq_len` random tokens below `vocab`, drawn from a generator of their own (the
// host's stays untouched), keyed as the trainer keys a training micro-batch: sample_ids 0..samples-1 of
// the step's global batch, `step`, and the seed.
sdk::Batch random_batch(std::int64_t samples, std::int64_t seq_len, std::int64_t vocab, std::int64_t step,
                        std::uint64_t seed);
// Samples [begin, end) of `batch`, with their own sample_ids: another split of the same global batch.
sdk::Batch batch_slice(const sdk::Batch& batch, std::int64_t begin, std::int64_t end);

// The loss in training or evaluation mode, the host's generator seeded with `rng_seed` first (so that
// a model drawing from it is as repeatable as it is in the trainer, where the seed is set once).
torch::Tensor loss_of(const plugins::ModelInstance& model, const sdk::Batch& batch, bool training,
                      std::uint64_t rng_seed);
// Every parameter's gradient of that training loss (zeros for one backward does not reach), in order.
std::vector<torch::Tensor> gradients_of(const plugins::ModelInstance& model, const sdk::Batch& batch,
                                        std::uint64_t rng_seed);

}  // namespace gradsweep::conformance
