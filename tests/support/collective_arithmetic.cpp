#include "support/collective_arithmetic.hpp"

#include <torch/torch.h>

namespace gradsweep::test {
namespace {

const char* algorithm_name(sdk::Algorithm a) {
  switch (a) {
    case sdk::Algorithm::Native: return "native";
    case sdk::Algorithm::Ring: return "ring";
    case sdk::Algorithm::Hierarchical: return "hierarchical";
  }
  return "unknown algorithm";
}

const char* op_name(sdk::ReduceOp op) {
  switch (op) {
    case sdk::ReduceOp::Sum: return "sum";
    case sdk::ReduceOp::Max: return "max";
    case sdk::ReduceOp::Min: return "min";
  }
  return "unknown op";
}

bool reduces(CollectiveKind kind) { return kind == CollectiveKind::Allreduce || kind == CollectiveKind::ReduceScatter; }

// Everything the ranks must agree on, as text: equal texts are matching calls.
std::string signature(const CollectiveCall& call) {
  std::string text = call.what;
  if (call.kind != CollectiveKind::Barrier && call.kind != CollectiveKind::Broadcast)
    text += std::string(", ") + algorithm_name(call.algorithm);
  if (reduces(call.kind)) text += std::string(", ") + op_name(call.op);
  if (call.kind == CollectiveKind::Broadcast) text += ", root " + std::to_string(call.root);
  return text;
}

}  // namespace

std::string mismatch(const std::vector<CollectiveCall>& calls) {
  bool same = true;
  for (const CollectiveCall& c : calls) same = same && signature(c) == signature(calls.front());
  if (same) return "";
  std::string text = "the ranks' calls do not match:";
  for (std::size_t r = 0; r < calls.size(); ++r)
    text += (r == 0 ? " rank " : "; rank ") + std::to_string(r) + " called " + signature(calls[r]);
  return text;
}

// A 16-bit pair is combined in float32 and rounded back, as the MPI backend's own reduction does.
torch::Tensor reduce_in_rank_order(const std::vector<torch::Tensor>& parts, sdk::ReduceOp op) {
  const torch::ScalarType dtype = parts.front().scalar_type();
  const bool widen = dtype == torch::kBFloat16 || dtype == torch::kHalf;
  const auto operand = [&](const torch::Tensor& t) { return widen ? t.reshape({-1}).to(torch::kFloat) : t.reshape({-1}); };
  torch::Tensor acc = operand(parts.front()).clone();
  for (std::size_t r = 1; r < parts.size(); ++r) {
    const torch::Tensor next = operand(parts[r]);
    switch (op) {
      case sdk::ReduceOp::Sum: acc.add_(next); break;
      case sdk::ReduceOp::Max: acc = torch::maximum(acc, next); break;
      case sdk::ReduceOp::Min: acc = torch::minimum(acc, next); break;
    }
    if (widen) acc = acc.to(dtype).to(torch::kFloat);
  }
  return acc.to(dtype);
}

void carry_out(std::vector<CollectiveCall>& calls) {
  const auto n = static_cast<std::int64_t>(calls.size());
  const CollectiveCall& first = calls.front();
  std::vector<torch::Tensor> inputs;
  for (const CollectiveCall& c : calls) inputs.push_back(c.input);
  torch::NoGradGuard no_grad;
  switch (first.kind) {
    case CollectiveKind::Barrier: return;
    case CollectiveKind::Allreduce: {
      const torch::Tensor result = reduce_in_rank_order(inputs, first.op);
      for (CollectiveCall& c : calls) c.output.copy_(result.view(c.output.sizes()));
      return;
    }
    case CollectiveKind::Broadcast: {
      const torch::Tensor result = calls[first.root].input.clone();
      for (CollectiveCall& c : calls) c.output.copy_(result.view(c.output.sizes()));
      return;
    }
    case CollectiveKind::Allgather: {
      std::vector<torch::Tensor> flat;
      for (const torch::Tensor& t : inputs) flat.push_back(t.reshape({-1}));
      const torch::Tensor result = torch::cat(flat);
      for (CollectiveCall& c : calls) c.output.copy_(result.view(c.output.sizes()));
      return;
    }
    case CollectiveKind::ReduceScatter: {
      const torch::Tensor result = reduce_in_rank_order(inputs, first.op);
      const std::int64_t chunk = result.numel() / n;
      for (std::int64_t r = 0; r < n; ++r) {
        CollectiveCall& c = calls[static_cast<std::size_t>(r)];
        c.output.copy_(result.narrow(0, r * chunk, chunk).view(c.output.sizes()));
      }
      return;
    }
  }
}

}  // namespace gradsweep::test
