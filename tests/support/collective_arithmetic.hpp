#pragma once
// One collective carried out over every rank's tensors at once, in the thread-ranks harness: the
// arithmetic the MPI backend leaves to MPI. Reductions run in rank order, pairwise, in the tensors' own
// dtype (a 16-bit sum rounds after every addition, as the MPI backend's bfloat16/float16 reduction does).
#include "support/rank_hub.hpp"

#include <string>
#include <vector>

namespace gradsweep::test {

// What the ranks disagree on (kind, algorithm, dtype, size, op, root), one line naming each rank's call;
// empty when they agree.
std::string mismatch(const std::vector<CollectiveCall>& calls);

// Reads every rank's input, then writes every rank's output.
void carry_out(std::vector<CollectiveCall>& calls);

// parts[0] op parts[1] op ... in rank order, in their dtype: the reference the harness's tests also use.
torch::Tensor reduce_in_rank_order(const std::vector<torch::Tensor>& parts, sdk::ReduceOp op);

}  // namespace gradsweep::test
