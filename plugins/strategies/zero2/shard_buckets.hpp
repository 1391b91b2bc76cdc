#pragma once
// ZeRO-2's buckets: gradients fused as `ring` fuses them (reverse parameter order, the order backward
// produces them, with a small first bucket), each bucket padded to a multiple of N ranks and sharded on
// its own: rank r owns the r-th 1/N of every bucket. A bucket's reduce-scatter then hands each rank
// exactly its piece, and the rank's shard of the model is the concatenation of its pieces of every
// bucket. Each piece is a contiguous run of the bucket's flat layout, i.e. slices of a few parameters,
// which are what the rank's optimizer updates.
#include "flat_layout.hpp"

#include <gradsweep/sdk/services.hpp>

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace gradsweep::strategies {

struct ShardBucket {
  std::vector<std::size_t> params;  // model parameter indices, in the bucket's order
  FlatLayout layout;                // where each of them sits in the bucket
  std::int64_t shard = 0;           // elements each rank owns: layout.numel() / N, rounded up
  std::int64_t shard_offset = 0;    // where this rank's piece starts in its shard of the model
  std::size_t pending = 0;          // gradients still to come this step
  torch::Tensor buffer;             // shard x N, wire dtype: allocated at the first gradient, freed once reduced
  std::unique_ptr<sdk::Request> request;
};

// The part of one parameter that falls in this rank's piece of its bucket.
struct OwnedSlice {
  std::size_t bucket;
  std::size_t param;          // model parameter index
  std::int64_t param_offset;  // first element within the flattened parameter
  std::int64_t shard_offset;  // first element within this rank's shard of the model
  std::int64_t numel;
};

class ShardBuckets {
 public:
  ShardBuckets(const std::vector<torch::Tensor>& params, std::int64_t first_bucket_bytes, std::int64_t bucket_bytes,
               torch::ScalarType wire, int rank, int ranks);

  std::vector<ShardBucket>& buckets() { return buckets_; }
  std::size_t bucket_of(std::size_t param) const { return bucket_of_[param]; }
  std::size_t slot_of(std::size_t param) const { return slot_of_[param]; }
  // Elements in this rank's shard of the model: the sum of its pieces (padding included).
  std::int64_t shard_numel() const { return shard_numel_; }
  const std::vector<OwnedSlice>& owned() const { return owned_; }

 private:
  std::vector<ShardBucket> buckets_;
  std::vector<std::size_t> bucket_of_, slot_of_;
  std::int64_t shard_numel_ = 0;
  std::vector<OwnedSlice> owned_;
};

}  // namespace gradsweep::strategies
