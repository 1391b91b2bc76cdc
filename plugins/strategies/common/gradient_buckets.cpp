#include "gradient_buckets.hpp"

#include <gradsweep/sdk/status.hpp>

#include <torch/torch.h>

namespace gradsweep::strategies {

std::vector<std::vector<std::size_t>> bucket_groups(const std::vector<torch::Tensor>& params,
                                                    std::int64_t first_bucket_bytes, std::int64_t bucket_bytes,
                                                    std::int64_t element_bytes) {
  std::vector<std::vector<std::size_t>> groups;
  std::int64_t bytes = 0;
  for (std::size_t k = params.size(); k-- > 0;) {
    const std::int64_t size = params[k].numel() * element_bytes;
    const std::int64_t cap = groups.size() <= 1 ? first_bucket_bytes : bucket_bytes;
    if (groups.empty() || (bytes > 0 && bytes + size > cap)) {
      groups.emplace_back();
      bytes = 0;
    }
    groups.back().push_back(k);
    bytes += size;
  }
  return groups;
}

GradientBuckets::GradientBuckets(const std::vector<torch::Tensor>& params, std::int64_t first_bucket_bytes,
                                 std::int64_t bucket_bytes, torch::ScalarType wire)
    : params_(params), bucket_of_(params.size()), slot_of_(params.size()) {
  const auto groups = bucket_groups(params, first_bucket_bytes, bucket_bytes, torch::elementSize(wire));
  buckets_.resize(groups.size());
  for (std::size_t b = 0; b < groups.size(); ++b) {
    Bucket& bucket = buckets_[b];
    bucket.params = groups[b];
    std::vector<torch::Tensor> members;
    for (std::size_t j = 0; j < bucket.params.size(); ++j) {
      bucket_of_[bucket.params[j]] = b;
      slot_of_[bucket.params[j]] = j;
      members.push_back(params[bucket.params[j]]);
    }
    bucket.layout = FlatLayout(members);
    bucket.buffer = torch::zeros({bucket.layout.numel()}, params.front().options().dtype(wire));
  }
}

void GradientBuckets::begin_step() {
  for (Bucket& b : buckets_) {
    b.pending = b.params.size();
    b.request.reset();
  }
  next_launch_ = 0;
}

void GradientBuckets::ready(std::size_t i, const Launch& launch) {
  Bucket& bucket = buckets_[bucket_of_[i]];
  if (bucket.pending == 0) throw sdk::Error("gradient of parameter " + std::to_string(i) + " reported twice");
  bucket.layout.pack_gradient(params_[i], slot_of_[i], bucket.buffer);
  --bucket.pending;
  if (!launch) return;  // launching is left to finish()
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) launch(buckets_[next_launch_++]);
}

void GradientBuckets::finish(const Launch& launch) {
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (buckets_[bucket_of_[i]].pending > 0 && next_launch_ <= bucket_of_[i]) {
      // Not reported this step (the host reports every parameter, so this is only a safety net).
      Bucket& bucket = buckets_[bucket_of_[i]];
      bucket.layout.pack_gradient(params_[i], slot_of_[i], bucket.buffer);
    }
  for (Bucket& b : buckets_) b.pending = 0;
  while (next_launch_ < buckets_.size()) launch(buckets_[next_launch_++]);
  for (Bucket& b : buckets_)
    if (b.request) {
      sdk::check(b.request->wait());
      b.request.reset();
    }
}

}  // namespace gradsweep::strategies
