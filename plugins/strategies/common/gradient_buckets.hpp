#pragma once
// Horovod-style tensor fusion: gradients packed into buckets of about `bucket_bytes`, each bucket sent
// as one collective the moment its last gradient is ready during backward.
//
// Buckets are filled in reverse parameter order, the order backward produces gradients, so the first
// bucket completes early and its communication overlaps the rest of backward. Buckets are launched
// strictly in index order on every rank (a bucket that completes early waits for the ones before it):
// collectives must be issued in the same order everywhere, and autograd's order may differ between
// ranks when threads race.
#include "flat_layout.hpp"

#include <gradsweep/sdk/services.hpp>

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace gradsweep::strategies {

struct Bucket {
  std::vector<std::size_t> params;  // indices into the model's parameters
  FlatLayout layout;                // where each of them sits in `buffer`
  torch::Tensor buffer;             // in the wire dtype
  std::size_t pending = 0;          // gradients still to come this step
  std::unique_ptr<sdk::Request> request;
};

// Which parameters share a bucket: indices in reverse parameter order, cut where a bucket would pass its
// cap (`first_bucket_bytes` for the first, `bucket_bytes` after) at `element_bytes` per element. Shared by
// every bucketed strategy, so that ring's and zero2's buckets are the same.
std::vector<std::vector<std::size_t>> bucket_groups(const std::vector<torch::Tensor>& params,
                                                    std::int64_t first_bucket_bytes, std::int64_t bucket_bytes,
                                                    std::int64_t element_bytes);

class GradientBuckets {
 public:
  using Launch = std::function<void(Bucket&)>;

  // The first bucket holds at most `first_bucket_bytes`, the others `bucket_bytes`: a small first bucket
  // starts communicating early in backward even when the whole model fits in one bucket (PyTorch DDP
  // does the same with 1 MiB).
  GradientBuckets(const std::vector<torch::Tensor>& params, std::int64_t first_bucket_bytes, std::int64_t bucket_bytes,
                  torch::ScalarType wire);

  void begin_step();
  // Packs parameter i's gradient into its bucket and launches every bucket that is now ready, in order
  // (none when `launch` is empty: finish() launches them all).
  void ready(std::size_t i, const Launch& launch);
  // Launches what is left (parameters that never reported), then waits for every bucket.
  void finish(const Launch& launch);

  std::vector<Bucket>& buckets() { return buckets_; }
  const std::vector<torch::Tensor>& params() const { return params_; }

 private:
  std::vector<torch::Tensor> params_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;  // parameter -> bucket
  std::vector<std::size_t> slot_of_;    // parameter -> position within its bucket
  std::size_t next_launch_ = 0;
};

}  // namespace gradsweep::strategies
