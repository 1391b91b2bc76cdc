#pragma once
// One model unit under `fsdp` and `hsdp`: its parameters live in one flat storage that is allocated only
// while the unit is gathered, and this rank keeps a 1/N shard of it at rest (N: the ranks it is sharded
// over, the job's under fsdp, the node's under hsdp), with the shard's summed gradient.
//
// At construction the unit's parameters are re-pointed (set_data) into views of the flat storage, so
// gathering is one all-gather straight into the parameters' memory and freeing is one release; the
// parameters keep their identity, shape and autograd state.
#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/services.hpp>

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gradsweep::strategies {

class ShardedUnit {
 public:
  // Takes the parameters' current values (every rank's are equal) and frees the flat storage. `indices`:
  // each parameter's index among the model's (StrategySetup::parameters), for the optimizer's slices.
  ShardedUnit(std::string name, std::vector<torch::Tensor> params, std::vector<std::size_t> indices, int rank,
              int world);

  const std::string& name() const { return name_; }
  bool gathered() const { return gathered_; }
  std::int64_t full_bytes() const { return padded_ * element_size_; }
  std::int64_t shard_bytes() const { return shard_numel_ * element_size_; }

  // All-gathers the shards into the parameters; no-op if gathered, and only waits if a prefetch is in flight.
  void gather(sdk::Communicator& comm);
  // Starts the all-gather (allgather_async) and returns: the memory is allocated now, the values are there
  // once gather() has waited for it. No-op if gathered or in flight.
  void prefetch(sdk::Communicator& comm);
  bool in_flight() const { return static_cast<bool>(pending_); }
  // Frees the parameters' memory (no-op if not gathered); waits first for a prefetch in flight, whose
  // buffer the backend holds until it completes.
  void release();
  // Reduce-scatters the parameters' gradients (missing ones as zeros), adds this rank's part to the
  // gradient shard and drops the full gradients.
  void reduce_gradients(sdk::Communicator& comm);
  // Gathered parameters' values (e.g. restored from a checkpoint) become this rank's shard.
  void adopt_gathered();

  // This rank's slices of each parameter, in the shard, with the gradient shard's slices as their .grad:
  // what the optimizer updates, appended to `tensors`, and where each lies in its model parameter to
  // `slices` (the shard's padding is in none).
  void add_optimizer_slices(std::vector<torch::Tensor>& tensors, std::vector<sdk::OptimizerSlice>& slices) const;
  torch::Tensor& gradient_shard() { return grad_shard_; }

 private:
  std::string name_;
  std::vector<torch::Tensor> params_;
  std::vector<std::size_t> indices_;   // each parameter's model index
  std::vector<std::int64_t> offsets_;  // each parameter's first element in the flat vector
  std::int64_t numel_ = 0, padded_ = 0, shard_numel_ = 0, shard_begin_ = 0, element_size_ = 4;
  torch::Tensor flat_;                     // (padded_,) the parameters' storage; released when not gathered
  torch::Tensor shard_;                    // (shard_numel_,) this rank's part at rest
  torch::Tensor grad_shard_;               // (shard_numel_,) its gradient summed over ranks (and micro-batches)
  bool gathered_ = true;                   // the storage is allocated (and, unless pending_, filled)
  std::unique_ptr<sdk::Request> pending_;  // a prefetch in flight
};

// The optimizer step over sharded units (fsdp, hsdp): each gradient shard averaged over `ranks` (the job's
// ranks, whose gradients the shards summed), their global norm from the squared norms summed over
// `norm_group` (ranks whose shards cover the model once), clipped to spec.grad_clip, then the optimizer
// stepped at `lr`. Returns the norm before clipping.
double step_shards(std::vector<ShardedUnit>& units, sdk::Communicator& norm_group, int ranks,
                   const sdk::OptimizerSpec& spec, sdk::SlicedOptimizer& optimizer, double lr);

}  // namespace gradsweep::strategies
