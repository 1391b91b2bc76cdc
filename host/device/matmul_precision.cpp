#include "device/matmul_precision.hpp"

#include <ATen/Context.h>

namespace gradsweep::device {

std::string set_float32_matmul_precision(bool tf32) {
  at::globalContext().setFloat32MatmulPrecision(tf32 ? "high" : "highest");
  return float32_matmul_precision();
}

std::string float32_matmul_precision() {
  switch (at::globalContext().float32MatmulPrecision()) {
    case at::Float32MatmulPrecision::HIGHEST: return "highest";
    case at::Float32MatmulPrecision::HIGH: return "high";
    case at::Float32MatmulPrecision::MEDIUM: return "medium";
  }
  return "unknown";
}

}  // namespace gradsweep::device
