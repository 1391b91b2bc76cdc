#include "shard_buckets.hpp"

#include "gradient_buckets.hpp"

#include <torch/torch.h>

#include <algorithm>

namespace gradsweep::strategies {

ShardBuckets::ShardBuckets(const std::vector<torch::Tensor>& params, std::int64_t first_bucket_bytes,
                           std::int64_t bucket_bytes, torch::ScalarType wire, int rank, int ranks)
    : bucket_of_(params.size()), slot_of_(params.size()) {
  // The same buckets as ring's (common/gradient_buckets), each then sharded on its own.
  const auto groups = bucket_groups(params, first_bucket_bytes, bucket_bytes, torch::elementSize(wire));
  buckets_.resize(groups.size());
  for (std::size_t b = 0; b < groups.size(); ++b) {
    ShardBucket& bucket = buckets_[b];
    bucket.params = groups[b];
    std::vector<torch::Tensor> members;
    for (std::size_t j = 0; j < bucket.params.size(); ++j) {
      bucket_of_[bucket.params[j]] = b;
      slot_of_[bucket.params[j]] = j;
      members.push_back(params[bucket.params[j]]);
    }
    bucket.layout = FlatLayout(members);
    bucket.shard = (bucket.layout.numel() + ranks - 1) / ranks;
    bucket.shard_offset = shard_numel_;
    shard_numel_ += bucket.shard;

    // This rank's piece [begin, end) of the bucket, cut into the parameters it spans.
    const std::int64_t begin = rank * bucket.shard;
    const std::int64_t end = std::min(begin + bucket.shard, bucket.layout.numel());
    for (std::size_t j = 0; j < bucket.params.size(); ++j) {
      const std::int64_t from = std::max(begin, bucket.layout.offset(j));
      const std::int64_t to = std::min(end, bucket.layout.offset(j) + bucket.layout.numel(j));
      if (from >= to) continue;
      owned_.push_back(
          {b, bucket.params[j], from - bucket.layout.offset(j), bucket.shard_offset + from - begin, to - from});
    }
  }
}

}  // namespace gradsweep::strategies
