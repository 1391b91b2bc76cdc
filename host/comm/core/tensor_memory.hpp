#pragma once
// Whether two tensors share memory: collectives must not read what they are writing unless the
// algorithm allows that exact aliasing.
#include <torch/types.h>

namespace gradsweep::comm {

inline bool overlap(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  const auto* a0 = static_cast<const char*>(a.data_ptr());
  const auto* b0 = static_cast<const char*>(b.data_ptr());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

}  // namespace gradsweep::comm
