#include "comm/mpi/mpi_reduce_ops.hpp"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>

namespace gradsweep::comm::mpi {
namespace {

struct Sum {
  float operator()(float a, float b) const { return a + b; }
};
struct Max {
  float operator()(float a, float b) const { return std::max(a, b); }
};
struct Min {
  float operator()(float a, float b) const { return std::min(a, b); }
};

template <class T, class Combine>
void reduce_16bit(void* in, void* inout, int* length, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *length; ++i) b[i] = T(Combine{}(static_cast<float>(a[i]), static_cast<float>(b[i])));
}

struct Ops16 {
  MPI_Op bf16[3];  // indexed by sdk::ReduceOp
  MPI_Op half[3];
};

// Created once MPI runs; never freed (MPI_Finalize releases them).
const Ops16& ops16() {
  static Ops16 ops;
  static std::once_flag once;
  std::call_once(once, [] {
    MPI_Op_create(&reduce_16bit<c10::BFloat16, Sum>, 1, &ops.bf16[0]);
    MPI_Op_create(&reduce_16bit<c10::BFloat16, Max>, 1, &ops.bf16[1]);
    MPI_Op_create(&reduce_16bit<c10::BFloat16, Min>, 1, &ops.bf16[2]);
    MPI_Op_create(&reduce_16bit<c10::Half, Sum>, 1, &ops.half[0]);
    MPI_Op_create(&reduce_16bit<c10::Half, Max>, 1, &ops.half[1]);
    MPI_Op_create(&reduce_16bit<c10::Half, Min>, 1, &ops.half[2]);
  });
  return ops;
}

}  // namespace

MPI_Op reduce_op(torch::ScalarType dtype, sdk::ReduceOp op) {
  const auto i = static_cast<std::size_t>(op);
  if (i > 2) throw std::invalid_argument("unknown ReduceOp " + std::to_string(i));
  if (dtype == torch::kBFloat16) return ops16().bf16[i];
  if (dtype == torch::kHalf) return ops16().half[i];
  static const MPI_Op native[3] = {MPI_SUM, MPI_MAX, MPI_MIN};
  return native[i];
}

void create_reduce_ops() { ops16(); }

}  // namespace gradsweep::comm::mpi
