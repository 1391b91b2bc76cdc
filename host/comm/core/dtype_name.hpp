#pragma once
// "float32", "bfloat16", ... : how every backend's messages, the flight recorder and the docs spell a
// tensor's dtype. Internal to host/comm.
#include <torch/types.h>

namespace gradsweep::comm {

inline const char* dtype_name(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat: return "float32";
    case torch::kDouble: return "float64";
    case torch::kBFloat16: return "bfloat16";
    case torch::kHalf: return "float16";
    case torch::kInt: return "int32";
    case torch::kLong: return "int64";
    case torch::kByte: return "uint8";
    default: return c10::toString(t);
  }
}

}  // namespace gradsweep::comm
