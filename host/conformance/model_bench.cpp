#include "conformance/model_bench.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <utility>

namespace gradsweep::conformance {

ModelBench::ModelBench(const plugins::PluginRecord& record, sdk::Options options, std::uint64_t seed)
    : record_(&record),
      options_(std::move(options)),
      comm_(comm::make_local_communicator()),
      logger_("model " + record.name),
      seed_(seed) {}

std::unique_ptr<plugins::ModelInstance> ModelBench::build(std::uint64_t seed) const {
  torch::manual_seed(seed);
  return std::make_unique<plugins::ModelInstance>(
      *record_, sdk::PluginContext{options_, logger_, metrics_, *comm_, torch::Device(torch::kCPU)});
}

sdk::ModelInfo info_of(const plugins::ModelInstance& model) {
  sdk::ModelInfo info;
  model.call<&sdk::ModelAbi::info>(&info);
  return info;
}

std::vector<sdk::Parameter> parameters_of(const plugins::ModelInstance& model) {
  std::vector<sdk::Parameter> params;
  model.call<&sdk::ModelAbi::parameters>(&params);
  return params;
}

std::vector<sdk::NamedTensor> buffers_of(const plugins::ModelInstance& model) {
  std::vector<sdk::NamedTensor> buffers;
  model.call<&sdk::ModelAbi::buffers>(&buffers);
  return buffers;
}

sdk::Batch random_batch(std::int64_t samples, std::int64_t seq_len, std::int64_t vocab, std::int64_t step,
                        std::uint64_t seed) {
  at::Generator generator = at::detail::createCPUGenerator(seed);
  const torch::Tensor tokens = torch::randint(vocab, {samples, seq_len + 1}, generator, torch::kLong);
  sdk::Batch batch;
  batch.inputs = tokens.slice(1, 0, seq_len).contiguous();
  batch.targets = tokens.slice(1, 1, seq_len + 1).contiguous();
  batch.sample_ids = torch::arange(samples, torch::kLong);
  batch.step = step;
  batch.seed = seed;
  return batch;
}

sdk::Batch batch_slice(const sdk::Batch& batch, std::int64_t begin, std::int64_t end) {
  sdk::Batch part = batch;
  part.inputs = batch.inputs.slice(0, begin, end).contiguous();
  part.targets = batch.targets.slice(0, begin, end).contiguous();
  part.sample_ids = batch.sample_ids.slice(0, begin, end).contiguous();
  return part;
}

torch::Tensor loss_of(const plugins::ModelInstance& model, const sdk::Batch& batch, bool training,
                      std::uint64_t rng_seed) {
  model.call<&sdk::ModelAbi::set_training>(training);
  torch::manual_seed(rng_seed);
  torch::Tensor loss;
  model.call<&sdk::ModelAbi::loss>(batch, nullptr, &loss);
  return loss;
}

std::vector<torch::Tensor> gradients_of(const plugins::ModelInstance& model, const sdk::Batch& batch,
                                        std::uint64_t rng_seed) {
  const std::vector<sdk::Parameter> params = parameters_of(model);
  for (const auto& p : params) p.tensor.mutable_grad() = torch::Tensor();  // backward adds to what is there
  loss_of(model, batch, /*training=*/true, rng_seed).backward();
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    grads.push_back(p.tensor.grad().defined() ? p.tensor.grad().detach().clone() : torch::zeros_like(p.tensor));
  for (const auto& p : params) p.tensor.mutable_grad() = torch::Tensor();
  return grads;
}

}  // namespace gradsweep::conformance
