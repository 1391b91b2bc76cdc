#include "zero2_strategy.hpp"

#include "strategy_variants.hpp"

#include <gradsweep/sdk/model_optimizer_state.hpp>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace gradsweep::strategies {
namespace {

// Buckets reduce-scattering at once: enough to keep the worker busy while backward goes on, few enough
// that the bucket buffers alive at any moment stay a small multiple of bucket_mb.
constexpr std::size_t kMaxInFlight = 2;
constexpr double kMiB = 1024.0 * 1024.0;

double positive_mb(const sdk::Options& options, const char* key, const std::string& strategy) {
  const double value = options.number(key);
  if (!(value > 0) || !std::isfinite(value)) {
    std::ostringstream text;
    text << "strategy '" << strategy << "': " << key << " = " << value
         << " is out of range; it must be a finite number of MiB > 0";
    throw sdk::Error(text.str());
  }
  return value;
}

}  // namespace

Zero2Strategy::Zero2Strategy(const sdk::PluginContext& context, MixedPrecision precision, const char* name)
    : Strategy(context),
      name_(name),
      amp_(precision),
      comm_(sdk::collective::with_algorithm(context.comm,
                                            algorithm_option(context.options, context.comm.features(), name))),
      bucket_mb_(positive_mb(context.options, "bucket_mb", name)),
      first_bucket_mb_(std::min(bucket_mb_, positive_mb(context.options, "first_bucket_mb", name))),
      overlap_(context.options.flag("overlap")) {}

void Zero2Strategy::on_setup(const sdk::StrategySetup& setup) {
  params_ = sdk::tensors_of(setup.parameters);
  spec_ = setup.optimizer;
  buckets_.emplace(params_, static_cast<std::int64_t>(first_bucket_mb_ * kMiB),
                   static_cast<std::int64_t>(bucket_mb_ * kMiB), amp_.comm_dtype(), comm_.rank(), comm_.size());
  packed_.assign(params_.size(), 0);
  const auto options = params_.front().options();
  grad_shard_ = torch::zeros({buckets_->shard_numel()}, options.dtype(amp_.comm_dtype()));
  // In float32 the reduced shard itself is averaged and clipped in place: no second shard-sized buffer.
  master_grad_ = amp_.enabled() ? torch::zeros({buckets_->shard_numel()}, options.dtype(torch::kFloat)) : grad_shard_;

  // The optimizer sees this rank's slices of the parameters, each decayed or not by its parameter's shape;
  // the bucket padding is in no slice.
  std::vector<sdk::OptimizerSlice> slices;
  for (const OwnedSlice& s : buckets_->owned()) {
    torch::Tensor values = params_[s.param].detach().view({-1}).narrow(0, s.param_offset, s.numel);
    values.mutable_grad() = master_grad_.narrow(0, s.shard_offset, s.numel);
    owned_values_.push_back(values);
    slices.push_back({static_cast<std::int64_t>(s.param), s.param_offset, s.numel});
  }
  optimizer_ = sdk::make_sliced_optimizer(spec_, owned_values_, slices, params_);
  context().metrics.record("buckets", static_cast<double>(buckets_->buckets().size()));
}

void Zero2Strategy::on_begin_step(const sdk::StepContext& step) {
  step_ = step.step;
  // Gradients start undefined: the first micro-batch's backward allocates them, later ones accumulate.
  for (torch::Tensor& p : params_)
    if (p.grad().defined()) p.mutable_grad() = torch::Tensor();
  for (ShardBucket& b : buckets_->buckets()) {
    b.pending = b.params.size();
    b.request.reset();
    b.buffer = torch::Tensor();
  }
  std::fill(packed_.begin(), packed_.end(), 0);
  next_launch_ = 0;
  in_flight_.clear();
  bucket_bytes_live_ = bucket_bytes_peak_ = 0;
}

void Zero2Strategy::pack(std::size_t i) {
  ShardBucket& bucket = buckets_->buckets()[buckets_->bucket_of(i)];
  if (!bucket.buffer.defined()) {
    // Zeros: the padding past the bucket's last parameter is reduced too, and must stay finite.
    bucket.buffer = torch::zeros({bucket.shard * comm_.size()}, grad_shard_.options());
    bucket_bytes_live_ += static_cast<std::int64_t>(bucket.buffer.nbytes());
    bucket_bytes_peak_ = std::max(bucket_bytes_peak_, bucket_bytes_live_);
  }
  bucket.layout.pack_gradient(params_[i], buckets_->slot_of(i), bucket.buffer);
  // From here the bucket holds the gradient: freeing it is what keeps no full-size gradient alive.
  params_[i].mutable_grad() = torch::Tensor();
  packed_[i] = 1;
  --bucket.pending;
}

void Zero2Strategy::launch_ready() {
  auto& buckets = buckets_->buckets();
  while (next_launch_ < buckets.size() && buckets[next_launch_].pending == 0) {
    ShardBucket& b = buckets[next_launch_];
    if (amp_.enabled()) amp_.maybe_inject_overflow(step_, comm_.rank(), b.buffer);
    torch::Tensor piece = grad_shard_.narrow(0, b.shard_offset, b.shard);
    b.request = sdk::collective::reduce_scatter_async(comm_, b.buffer, piece);
    in_flight_.push_back(next_launch_++);
    while (in_flight_.size() > kMaxInFlight) complete_oldest();
  }
}

void Zero2Strategy::complete_oldest() {
  ShardBucket& b = buckets_->buckets()[in_flight_.front()];
  in_flight_.pop_front();
  sdk::collective::wait(b.request);
  bucket_bytes_live_ -= static_cast<std::int64_t>(b.buffer.nbytes());
  b.buffer = torch::Tensor();
}

void Zero2Strategy::on_gradient_ready(std::size_t index) {
  if (!overlap_) return;  // packed bucket by bucket after backward
  pack(index);
  launch_ready();
}

void Zero2Strategy::on_end_backward() {
  // Without overlap, everything; with it, only parameters that never reported (a safety net). Bucket by
  // bucket, so that without overlap too at most kMaxInFlight + 1 bucket buffers exist at once.
  for (const ShardBucket& b : buckets_->buckets())
    for (std::size_t i : b.params) {
      if (!packed_[i]) pack(i);
      launch_ready();
    }
  while (!in_flight_.empty()) complete_oldest();
  // What is left of the parameters' own gradients (0: each was freed when packed), so a test can tell.
  std::int64_t retained = 0;
  for (const torch::Tensor& p : params_)
    if (p.grad().defined()) retained += static_cast<std::int64_t>(p.grad().nbytes());
  context().metrics.record("retained_grad_bytes", static_cast<double>(retained));
  const std::int64_t master = master_grad_.is_same(grad_shard_) ? 0 : master_grad_.nbytes();
  context().metrics.record("gradient_buffer_bytes",
                           static_cast<double>(bucket_bytes_peak_ + grad_shard_.nbytes() + master));
}

sdk::StepResult Zero2Strategy::on_update(const sdk::StepContext& step) {
  const double scale = amp_.loss_scale();
  if (amp_.enabled()) {
    // Each rank sees only its shard: the ranks agree on overflow before anyone updates.
    const bool overflow = any_rank(comm_, MixedPrecision::has_overflow(grad_shard_));
    if (!amp_.finish_step(overflow, step.step, context().log, context().metrics)) return {false, 0.0};
  }
  if (!master_grad_.is_same(grad_shard_)) master_grad_.copy_(grad_shard_);
  master_grad_.mul_(1.0 / (static_cast<double>(comm_.size()) * scale));

  // Global norm for clipping: the pieces are disjoint (padding is zero), so the squared norms add up.
  torch::Tensor norm_squared = master_grad_.to(torch::kDouble).pow(2).sum().reshape({1});
  sdk::collective::allreduce(comm_, norm_squared);
  const double norm = std::sqrt(norm_squared.item<double>());
  if (spec_.grad_clip > 0 && norm > spec_.grad_clip) master_grad_.mul_(spec_.grad_clip / (norm + 1e-6));

  sdk::set_learning_rate(*optimizer_.optimizer, step.lr);
  optimizer_.optimizer->step();
  gather_parameters();
  context().metrics.record("optimizer_state_bytes",
                           static_cast<double>(sdk::optimizer_state_bytes(*optimizer_.optimizer)));
  return {true, norm};
}

// Each bucket's parameters travel in float32 through a buffer of the bucket's size; kMaxInFlight of them
// are in flight at once, so the gather needs no full-size buffer either.
void Zero2Strategy::gather_parameters() {
  struct Gathering {
    std::size_t bucket;
    torch::Tensor flat;
    std::unique_ptr<sdk::Request> request;
  };
  std::deque<Gathering> pending;
  const auto finish_oldest = [&] {
    Gathering& g = pending.front();
    sdk::collective::wait(g.request);
    const ShardBucket& b = buckets_->buckets()[g.bucket];
    std::vector<torch::Tensor> members;
    for (std::size_t i : b.params) members.push_back(params_[i]);
    b.layout.unpack_parameters(g.flat, members);
    pending.pop_front();
  };
  const auto& owned = buckets_->owned();
  std::size_t next_slice = 0;
  auto& buckets = buckets_->buckets();
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    const ShardBucket& b = buckets[k];
    torch::Tensor flat = torch::zeros({b.shard * comm_.size()}, master_grad_.options());
    torch::Tensor mine = flat.narrow(0, comm_.rank() * b.shard, b.shard);
    for (; next_slice < owned.size() && owned[next_slice].bucket == k; ++next_slice) {
      const OwnedSlice& s = owned[next_slice];
      mine.narrow(0, s.shard_offset - b.shard_offset, s.numel).copy_(owned_values_[next_slice]);
    }
    pending.push_back({k, flat, sdk::collective::allgather_async(comm_, mine, flat)});
    while (pending.size() > kMaxInFlight) finish_oldest();
  }
  while (!pending.empty()) finish_oldest();
}

void Zero2Strategy::on_save_state(torch::serialize::OutputArchive& archive) {
  optimizer_.save(archive);
  if (amp_.enabled()) amp_.save(archive);
}

void Zero2Strategy::on_load_state(torch::serialize::InputArchive& archive) {
  optimizer_.load(archive);
  if (amp_.enabled()) amp_.load(archive);
}

// The optimizer updates views of the parameters, which the host has already restored in place, and every
// other buffer is refilled each step: only the moments (cut from all old shards) and the loss scale (the
// same on every old rank) are carried over.
void Zero2Strategy::on_load_resharded(sdk::SavedStates& saved) {
  std::vector<int> ranks(static_cast<std::size_t>(saved.world_size()));
  std::iota(ranks.begin(), ranks.end(), 0);
  sdk::ModelOptimizerState(saved, ranks, spec_, params_).restore(optimizer_);
  if (amp_.enabled()) amp_.load(sdk::saved_state(saved, 0));
}

}  // namespace gradsweep::strategies
