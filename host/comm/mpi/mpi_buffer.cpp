#include "comm/mpi/mpi_buffer.hpp"

#include "comm/mpi/mpi_runtime.hpp"

#include <climits>
#include <optional>
#include <stdexcept>

namespace gradsweep::comm::mpi {
namespace {

// bfloat16 and float16 travel as raw 16-bit words: MPI has no type for them (see mpi_reduce_ops.hpp).
std::optional<MPI_Datatype> mpi_type(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat: return MPI_FLOAT;
    case torch::kDouble: return MPI_DOUBLE;
    case torch::kBFloat16:
    case torch::kHalf: return MPI_UINT16_T;
    case torch::kInt: return MPI_INT32_T;
    case torch::kLong: return MPI_INT64_T;
    case torch::kByte: return MPI_UINT8_T;
    default: return std::nullopt;
  }
}

void check_same_dtype(const torch::Tensor& input, const torch::Tensor& output, const std::string& call) {
  if (input.scalar_type() != output.scalar_type())
    throw std::invalid_argument(call + ": input is " + dtype_name(input.scalar_type()) + " but output is " +
                                dtype_name(output.scalar_type()));
}

}  // namespace

Buffer buffer_of(const torch::Tensor& t, const std::string& call, const char* role) {
  const std::string who = call + ": " + role + " tensor";
  if (!t.defined()) throw std::invalid_argument(who + " is undefined");
  if (!t.device().is_cpu())
    throw std::invalid_argument(who + " is on " + t.device().str() +
                                "; the MPI backend moves CPU tensors (CUDA tensors need the NCCL backend)");
  if (!t.is_contiguous())
    throw std::invalid_argument(who + " is not contiguous (sizes " + c10::str(t.sizes()) + ", strides " +
                                c10::str(t.strides()) + "); pass .contiguous() or a flat buffer");
  const std::optional<MPI_Datatype> type = mpi_type(t.scalar_type());
  if (!type)
    throw std::invalid_argument(who + " has dtype " + std::string(dtype_name(t.scalar_type())) +
                                "; the MPI backend supports float32, float64, bfloat16, float16, int32, int64, uint8");
  if (t.numel() > INT_MAX)
    throw std::invalid_argument(who + " has " + std::to_string(t.numel()) +
                                " elements; one MPI call moves at most 2^31-1: split it");
  return {t.numel() == 0 ? nullptr : t.data_ptr(), static_cast<int>(t.numel()), *type,
          static_cast<std::uint64_t>(t.numel()) * t.element_size()};
}

std::string describe(const std::string& call, const torch::Tensor& t) {
  return call + " of " + std::to_string(t.numel()) + " " + dtype_name(t.scalar_type()) + " (" +
         std::to_string(t.numel() * t.element_size()) + " bytes)";
}

void check_mpi(int rc, const std::string& call, const char* function) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(call + ": " + function + " failed: " + error_message(rc));
}

void check_allgather_shapes(const torch::Tensor& input, const torch::Tensor& output, int ranks,
                            const std::string& call) {
  check_same_dtype(input, output, call);
  if (output.numel() != input.numel() * ranks)
    throw std::invalid_argument(call + ": output has " + std::to_string(output.numel()) +
                                " elements; expected size() x input = " + std::to_string(ranks) + " x " +
                                std::to_string(input.numel()));
}

void check_reduce_scatter_shapes(const torch::Tensor& input, const torch::Tensor& output, int ranks,
                                 const std::string& call) {
  check_same_dtype(input, output, call);
  if (input.numel() != output.numel() * ranks)
    throw std::invalid_argument(call + ": input has " + std::to_string(input.numel()) +
                                " elements; expected size() x output = " + std::to_string(ranks) + " x " +
                                std::to_string(output.numel()));
}

}  // namespace gradsweep::comm::mpi
