// Tensors as NCCL buffers (comm/nccl/nccl_buffer.hpp): moved out of nccl_communicator.cpp, which the async
// reduce_scatter and allgather would have taken past 600 lines.
#include "comm/nccl/nccl_buffer.hpp"

#include "comm/core/dtype_name.hpp"

#include <optional>
#include <stdexcept>

namespace gradsweep::comm::nccl {
namespace {

std::optional<ncclDataType_t> nccl_type(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat: return ncclFloat32;
    case torch::kDouble: return ncclFloat64;
    case torch::kBFloat16: return ncclBfloat16;
    case torch::kHalf: return ncclFloat16;
    case torch::kInt: return ncclInt32;
    case torch::kLong: return ncclInt64;
    case torch::kByte: return ncclUint8;
    default: return std::nullopt;
  }
}

}  // namespace

ncclRedOp_t nccl_op(sdk::ReduceOp op) {
  switch (op) {
    case sdk::ReduceOp::Sum: return ncclSum;
    case sdk::ReduceOp::Max: return ncclMax;
    case sdk::ReduceOp::Min: return ncclMin;
  }
  throw std::invalid_argument("unknown ReduceOp " + std::to_string(static_cast<unsigned>(op)));
}

bool overlap(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  const auto* a0 = static_cast<const char*>(a.data_ptr());
  const auto* b0 = static_cast<const char*>(b.data_ptr());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

DeviceBuffer device_buffer(const torch::Tensor& t, int gpu, const std::string& call, const char* role) {
  const std::string who = call + ": " + role + " tensor";
  if (!t.defined()) throw std::invalid_argument(who + " is undefined");
  if (!t.is_contiguous())
    throw std::invalid_argument(who + " is not contiguous (sizes " + c10::str(t.sizes()) + ", strides " +
                                c10::str(t.strides()) + "); pass .contiguous() or a flat buffer");
  const std::optional<ncclDataType_t> type = nccl_type(t.scalar_type());
  if (!type)
    throw std::invalid_argument(who + " has dtype " + std::string(dtype_name(t.scalar_type())) +
                                "; the NCCL backend supports float32, float64, bfloat16, float16, int32, int64, uint8");
  const auto bytes = static_cast<std::uint64_t>(t.numel()) * t.element_size();
  const auto count = static_cast<std::size_t>(t.numel());
  if (t.device().is_cuda()) {
    if (t.device().index() != gpu)
      throw std::invalid_argument(who + " is on " + t.device().str() +
                                  " but this rank's NCCL communicator is on cuda:" + std::to_string(gpu));
    return {t, t, *type, count, bytes};
  }
  if (!t.device().is_cpu())
    throw std::invalid_argument(who + " is on " + t.device().str() + "; the NCCL backend takes CUDA (or CPU) tensors");
  return {t, t.to(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(gpu))), *type, count, bytes};
}

void prepare_allgather(DeviceBuffer& in, const DeviceBuffer& out, int rank, int ranks, const std::string& call) {
  if (in.user.scalar_type() != out.user.scalar_type())
    throw std::invalid_argument(call + ": input is " + dtype_name(in.user.scalar_type()) + " but output is " +
                                dtype_name(out.user.scalar_type()));
  if (out.user.numel() != in.user.numel() * ranks)
    throw std::invalid_argument(call + ": output has " + std::to_string(out.user.numel()) +
                                " elements; expected size() x input = " + std::to_string(ranks) + " x " +
                                std::to_string(in.user.numel()));
  const bool own_slot = in.count > 0 && !in.staged() && !out.staged() &&
                        in.data() == static_cast<char*>(out.data()) + static_cast<std::uint64_t>(rank) * in.bytes;
  if (!own_slot && !in.staged() && !out.staged() && overlap(in.user, out.user)) in.device = in.user.clone();
}

void prepare_reduce_scatter(const DeviceBuffer& in, DeviceBuffer& out, int rank, int ranks, const std::string& call) {
  if (in.user.scalar_type() != out.user.scalar_type())
    throw std::invalid_argument(call + ": input is " + dtype_name(in.user.scalar_type()) + " but output is " +
                                dtype_name(out.user.scalar_type()));
  if (in.user.numel() != out.user.numel() * ranks)
    throw std::invalid_argument(call + ": input has " + std::to_string(in.user.numel()) +
                                " elements; expected size() x output = " + std::to_string(ranks) + " x " +
                                std::to_string(out.user.numel()));
  const bool own_slot = out.count > 0 && !in.staged() && !out.staged() &&
                        out.data() == static_cast<char*>(in.data()) + static_cast<std::uint64_t>(rank) * out.bytes;
  if (!own_slot && !in.staged() && !out.staged() && overlap(in.user, out.user))
    out.device = torch::empty_like(out.user);
}

}  // namespace gradsweep::comm::nccl
